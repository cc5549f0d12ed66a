// The orphan watchdog (control-plane.ts Watchdog): a tiny detached process that holds the read end of a pipe from
// the process that started it. When that process dies in any way (even SIGKILL), the pipe closes and the watchdog
// kills the registered process groups and removes the temp dir. Lines on stdin: "+<pgid>", "-<pgid>", "dir <path>",
// "bye" (all cleaned up: forget everything). Plain Node ESM, no imports beyond node: (it runs from source and dist).
import { rmSync } from 'node:fs';

const groups = new Set();
let dir = '';
let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => {
  buf += d;
  let i;
  while ((i = buf.indexOf('\n')) >= 0) {
    const l = buf.slice(0, i);
    buf = buf.slice(i + 1);
    if (l.startsWith('+')) groups.add(Number(l.slice(1)));
    else if (l.startsWith('-')) groups.delete(Number(l.slice(1)));
    else if (l.startsWith('dir ')) dir = l.slice(4);
    else if (l === 'bye') {
      groups.clear();
      dir = '';
    }
  }
});
process.stdin.on('end', () => {
  const kill = (s) => {
    for (const g of groups) {
      try {
        process.kill(-g, s);
      } catch {
        // the group is already gone
      }
    }
  };
  kill('SIGTERM');
  setTimeout(
    () => {
      kill('SIGKILL');
      if (dir) {
        try {
          rmSync(dir, { recursive: true, force: true });
        } catch {
          // nothing more to do: the watchdog is the last resort
        }
      }
      process.exit(0);
    },
    groups.size ? 3000 : 0,
  );
});
