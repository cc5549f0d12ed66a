import { describeClockContract } from '../../testing/port-contracts.ts';
import { WALL_CLOCK } from './live-scheduler.ts';

describeClockContract('wall clock of the live scheduler', () => ({ clock: WALL_CLOCK, advance: (ms) => new Promise((r) => setTimeout(r, ms + 1)) }));
