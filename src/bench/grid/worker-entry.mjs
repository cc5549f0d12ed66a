// Worker threads do not inherit the main thread's module hooks on every Node version, so the worker
// registers the TypeScript loader itself (as bin/sits.mjs does), then loads its body.
import { register } from 'tsx/esm/api';

register();
await import('./worker.ts');
