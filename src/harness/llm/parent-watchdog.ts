// Dev mode and tests only: preloaded (node --import) into a process the fake kubelet starts for a container. The
// IPC channel to the fake kubelet's process is how the child learns that it died: it exits then, so a crashed test
// leaves no container process behind. Unref'd, so the channel itself keeps nothing alive.
process.on('disconnect', () => process.exit(137));
process.channel?.unref();
