/**
 * PodGroup (ai.sits2026.dev/v1): the gang object the scheduler watches. Pods join with the label
 * `ai.sits2026.dev/pod-group: <name>`; `minMember` pods are placed all-or-nothing, under the topology
 * constraint. Workload controllers (TrainingJob, …) create one per job.
 * TODO(api): move into src/api/schema so that it comes from the same source as the other kinds.
 */
export const POD_GROUP_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'podgroups.ai.sits2026.dev' },
  spec: {
    group: 'ai.sits2026.dev',
    names: { kind: 'PodGroup', listKind: 'PodGroupList', plural: 'podgroups', singular: 'podgroup', shortNames: ['pg'], categories: ['sits'] },
    scope: 'Namespaced',
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: [
          { name: 'MinMember', type: 'integer', jsonPath: '.spec.minMember' },
          { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
          { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
        ],
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              apiVersion: { type: 'string' },
              kind: { type: 'string' },
              metadata: { type: 'object' },
              spec: {
                type: 'object',
                required: ['minMember'],
                properties: {
                  minMember: { type: 'integer', minimum: 1, maximum: 100000, description: 'Pods placed together or not at all.' },
                  queue: { type: 'string', maxLength: 253 },
                  priorityClassName: { type: 'string', maxLength: 253 },
                  topology: {
                    type: 'object',
                    properties: {
                      required: { type: 'string', enum: ['node', 'nvlink-domain', 'rack', 'block', 'zone'] },
                      preferred: { type: 'string', enum: ['node', 'nvlink-domain', 'rack', 'block', 'zone'] },
                    },
                  },
                },
              },
              status: {
                type: 'object',
                properties: {
                  phase: { type: 'string', enum: ['Pending', 'Scheduled', 'Running', 'Failed'] },
                  message: { type: 'string', maxLength: 4096 },
                  scheduled: { type: 'integer' },
                },
              },
            },
          },
        },
      },
    ],
  },
} as const;
