/** Static provisioning: a fixed replica count, sized for the peak. */
import type { Autoscaler } from './policy.ts';

export class StaticPolicy implements Autoscaler {
  readonly name = 'static';
  constructor(readonly replicas: number) {}
  decide(): number {
    return this.replicas;
  }
}
