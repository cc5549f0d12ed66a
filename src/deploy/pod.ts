/**
 * What every pod template of the chart shares: the image (by digest when one is given), pull secrets, and the
 * per-component pod settings of values.ts `podSettings` (annotations, extra labels, placement, priority).
 */
import { block, choose, concat, entriesIf, quoted, raw, spread, type Node } from './tree.ts';

/** `repository@digest` when image.digest is set (the tag is then only a label), else `repository:tag`. */
export const image = (): Node =>
  choose('image.digest', concat(raw('image.repository'), '@', raw('image.digest')), concat(raw('image.repository'), ':', raw('image.tag')));

/** The values prefix of a component's pod settings: '' for the scheduler's (top level), else e.g. 'webhook.'. */
export type Prefix = '' | 'controllers.' | 'webhook.' | 'activator.' | 'extender.' | 'nodeAgent.';

/** A pod template's metadata: the chart's labels, then the component's podLabels and podAnnotations. */
export const podMetadata = (labels: Record<string, Node>, p: Prefix): Record<string, Node> => ({
  labels: { ...labels, ...spread(`${p}podLabels`) },
  ...entriesIf(`${p}podAnnotations`, { annotations: block(`${p}podAnnotations`) }),
});

/** A pod spec's placement and priority entries, each only when its value is set; pull secrets likewise. */
export const podPlacement = (p: Prefix): Record<string, Node> => ({
  ...entriesIf('imagePullSecrets', { imagePullSecrets: block('imagePullSecrets') }),
  ...entriesIf(`${p}priorityClassName`, { priorityClassName: quoted(`${p}priorityClassName`) }),
  ...entriesIf(`${p}nodeSelector`, { nodeSelector: block(`${p}nodeSelector`) }),
  ...entriesIf(`${p}tolerations`, { tolerations: block(`${p}tolerations`) }),
  ...entriesIf(`${p}affinity`, { affinity: block(`${p}affinity`) }),
});
