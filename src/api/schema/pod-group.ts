// PodGroup: the gang object the SITS scheduler watches. Pods join with the label
// `ai.sits2026.dev/pod-group: <name>` (same namespace); `minMember` of them are placed all-or-nothing, under
// the topology constraint. Workload controllers (TrainingJob, ...) create one per gang; users may too.
import { Type, type Static } from '@sinclair/typebox';
import { Conditions, Obj, PriorityClassName, QueueName, Resource, StringEnum, TopologyLevelEnum, celLevelAtMost, topologyRank, withRules } from './common.ts';

export const PodGroupTopology = withRules(
  Obj(
    {
      required: Type.Optional(TopologyLevelEnum('All placed members must share one domain of this level; the gang waits rather than span wider.')),
      preferred: Type.Optional(TopologyLevelEnum('The scheduler tries to keep the members inside one domain of this level, but spans wider rather than wait.')),
    },
    { description: 'Topology constraint of the gang (levels nvlink-domain < node < rack < block < zone).' },
  ),
  [
    {
      rule: `!has(self.required) || !has(self.preferred) || ${celLevelAtMost('self.preferred', 'self.required')}`,
      message: 'preferred must be the same as or narrower than required (nvlink-domain < node < rack < block < zone)',
      fieldPath: '.preferred',
      check: (self) => self.required === undefined || self.preferred === undefined || topologyRank(self.preferred) <= topologyRank(self.required),
    },
  ],
);
export type PodGroupTopology = Static<typeof PodGroupTopology>;

export const PodGroupSpec = Obj(
  {
    minMember: Type.Integer({
      description: 'Pods placed together or not at all; further members are placed when they fit (elastic gangs).',
      minimum: 1,
      maximum: 100000,
    }),
    queue: Type.Optional(QueueName()),
    priorityClassName: Type.Optional(PriorityClassName()),
    topology: Type.Optional(PodGroupTopology),
  },
  { description: 'Desired state of a PodGroup.' },
);
export type PodGroupSpec = Static<typeof PodGroupSpec>;

export const POD_GROUP_PHASES = ['Pending', 'Scheduled', 'Running', 'Failed'] as const;

export const PodGroupStatus = Obj(
  {
    phase: Type.Optional(StringEnum(POD_GROUP_PHASES, { description: 'Pending, Scheduled, Running or Failed.' })),
    message: Type.Optional(Type.String({ description: "Why the gang is not placed, in the scheduler's words.", maxLength: 4096 })),
    scheduled: Type.Optional(Type.Integer({ description: 'Members bound to nodes.', minimum: 0, format: 'int32' })),
    conditions: Type.Optional(Conditions),
  },
  { description: 'Observed state of a PodGroup.' },
);
export type PodGroupStatus = Static<typeof PodGroupStatus>;

export const PodGroup = Resource('PodGroup', PodGroupSpec, PodGroupStatus, 'A gang of pods placed all-or-nothing by the SITS scheduler.');
export type PodGroup = Static<typeof PodGroup>;
