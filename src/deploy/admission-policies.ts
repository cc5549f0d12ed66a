/**
 * ValidatingAdmissionPolicies the chart ships (ADR 0174): rules the kube-apiserver itself checks in CEL, so they
 * hold when SITS's webhook is down (fail closed with no extra availability risk) and no SITS process can be
 * talked around them.
 *
 * - sits-node-agent-restriction (nodeAgent.enabled): the node agent's RBAC cannot say "only your own Node";
 *   as the kubelet's NodeRestriction, the apiserver limits it to its own Node (the node its pod-bound token
 *   names) and only the keys it writes, and to the pods bound to that node and only the device annotation.
 * - sits-workloads-need-pod-rights (controllers.enabled): the controllers turn a TrainingJob, InferenceService,
 *   BatchInferenceJob or DataPipeline spec into pods with their own rights; creating one, or changing its spec,
 *   needs the requesting user's own right to create pods in that namespace.
 * - sits-webhook-secret (webhook.enabled): RBAC cannot limit `create` by name, so the webhook's Role may create any
 *   Secret in its namespace; the apiserver holds it to its one serving-certificate Secret, of type kubernetes.io/tls
 *   (a service-account-token Secret under that name would hand it another ServiceAccount's token).
 */
import { API_GROUP, ANNOTATION, MANAGED_NODE_ANNOTATIONS, MANAGED_NODE_LABELS } from '../api/wire.ts';
import { concat, quoted, raw, RELEASE_NAMESPACE, type Doc, type Node } from './tree.ts';

export const POLICY_NAMES = {
  nodeAgent: 'sits-node-agent-restriction',
  workloads: 'sits-workloads-need-pod-rights',
  webhookSecret: 'sits-webhook-secret',
} as const;

/** The extra the apiserver sets on a token bound to a pod on a node (KEP-4193, GA in 1.32). */
export const NODE_NAME_EXTRA = 'authentication.kubernetes.io/node-name';

/** The Node labels the agent writes (src/node/reading.ts). */
export const NODE_AGENT_LABELS: readonly string[] = MANAGED_NODE_LABELS;
/** The Node annotations it writes: the topology loop's, and the GPU health watcher's quarantine (--dcgm-url). */
export const NODE_AGENT_ANNOTATIONS: readonly string[] = [...MANAGED_NODE_ANNOTATIONS, ANNOTATION.gpuQuarantine];
/** The pod annotation the device plugin writes (src/node/device-plugin.ts). */
export const DEVICE_PLUGIN_POD_ANNOTATIONS: readonly string[] = [ANNOTATION.gpuAllocated];

/** The kinds whose spec a controller turns into pods (each has `container` or `podTemplate`). */
export const POD_MAKING_KINDS = ['trainingjobs', 'inferenceservices', 'batchinferencejobs', 'datapipelines'] as const;

const policyLabels = (component: string): Record<string, Node> => ({
  'app.kubernetes.io/name': 'sits',
  'app.kubernetes.io/component': component,
  'app.kubernetes.io/part-of': 'sits',
  'app.kubernetes.io/version': quoted('image.tag'),
});

const cel = (s: string): string => `'${s}'`;
const celList = (l: readonly string[]): string => `[${l.map(cel).join(', ')}]`;

/**
 * The keys of metadata.<field> that differ between oldObject and object (the variables old<Field>, new<Field>)
 * outside `allowed`: removed, added or changed.
 */
function changedKeys(field: 'Labels' | 'Annotations', allowed: readonly string[]): string {
  const [o, n, a] = [`variables.old${field}`, `variables.new${field}`, celList(allowed)];
  return `${o}.filter(k, !(k in ${a}) && (!(k in ${n}) || ${n}[k] != ${o}[k])) + ${n}.filter(k, !(k in ${a}) && !(k in ${o}))`;
}

const SAME_OWNERS = 'object.metadata.?ownerReferences == oldObject.metadata.?ownerReferences && object.metadata.?finalizers == oldObject.metadata.?finalizers';

function nodeAgentPolicy(serviceAccount: string): Doc {
  // The checks below are about an update of the object itself; anything else is refused by the second rule.
  const isNode = "request.operation == 'UPDATE' && variables.subResource == '' && request.resource.resource == 'nodes'";
  const isPod = "request.operation == 'UPDATE' && variables.subResource == '' && request.resource.resource == 'pods'";
  return {
    file: 'admissionpolicy-node-agent.yaml',
    when: 'nodeAgent.enabled',
    body: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: POLICY_NAMES.nodeAgent, labels: policyLabels('node-agent') },
      spec: {
        failurePolicy: 'Fail',
        // Every write to nodes and pods, subresources included: the agent only ever updates (patches) the two.
        matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['*'], operations: ['*'], resources: ['nodes', 'nodes/*', 'pods', 'pods/*'] }] },
        matchConditions: [
          { name: 'node-agent', expression: concat("request.userInfo.username == 'system:serviceaccount:", raw('nodeAgent.namespace'), `:${serviceAccount}'`) },
        ],
        variables: [
          // Absent (not empty) on a request for the object itself.
          { name: 'subResource', expression: "request.?subResource.orValue('')" },
          {
            name: 'nodeName',
            expression: `'${NODE_NAME_EXTRA}' in request.userInfo.extra && size(request.userInfo.extra['${NODE_NAME_EXTRA}']) == 1 ? request.userInfo.extra['${NODE_NAME_EXTRA}'][0] : ''`,
          },
          { name: 'oldLabels', expression: 'oldObject.metadata.?labels.orValue({})' },
          { name: 'newLabels', expression: 'object.metadata.?labels.orValue({})' },
          { name: 'oldAnnotations', expression: 'oldObject.metadata.?annotations.orValue({})' },
          { name: 'newAnnotations', expression: 'object.metadata.?annotations.orValue({})' },
          // What changed outside the keys the agent writes: on a Node its labels and annotations, on a pod the
          // device annotation alone (no label).
          { name: 'changedNodeKeys', expression: `${changedKeys('Labels', NODE_AGENT_LABELS)} + ${changedKeys('Annotations', NODE_AGENT_ANNOTATIONS)}` },
          { name: 'changedPodKeys', expression: `${changedKeys('Labels', [])} + ${changedKeys('Annotations', DEVICE_PLUGIN_POD_ANNOTATIONS)}` },
        ],
        validations: [
          {
            expression: "variables.nodeName != ''",
            message: `the node agent's token names no node (no ${NODE_NAME_EXTRA}): only a token bound to its pod on a node (the projected ServiceAccount token) may write`,
            reason: 'Forbidden',
          },
          {
            expression: "request.operation == 'UPDATE' && variables.subResource == ''",
            messageExpression:
              "'the node agent may only update its own Node and the pods on it, not ' + request.operation + ' ' + request.resource.resource + (variables.subResource == '' ? '' : '/' + variables.subResource)",
            reason: 'Forbidden',
          },
          {
            expression: `!(${isNode}) || (oldObject.metadata.name == variables.nodeName && object.metadata.name == variables.nodeName)`,
            messageExpression: "'the node agent of node ' + variables.nodeName + ' may not change node ' + oldObject.metadata.name",
            reason: 'Forbidden',
          },
          {
            expression: `!(${isNode}) || (object.?spec == oldObject.?spec && ${SAME_OWNERS})`,
            messageExpression:
              "'the node agent may not change node ' + oldObject.metadata.name + ': spec (taints, unschedulable...), ownerReferences and finalizers are not its to write'",
            reason: 'Forbidden',
          },
          {
            expression: `!(${isNode}) || size(variables.changedNodeKeys) == 0`,
            messageExpression:
              "'the node agent may change only its own labels and annotations of node ' + oldObject.metadata.name + ', not ' + variables.changedNodeKeys.join(', ')",
            reason: 'Forbidden',
          },
          {
            expression: `!(${isPod}) || (oldObject.spec.?nodeName.orValue('') == variables.nodeName)`,
            messageExpression:
              "'the node agent of node ' + variables.nodeName + ' may not change pod ' + oldObject.metadata.namespace + '/' + oldObject.metadata.name + ': it is not bound to that node'",
            reason: 'Forbidden',
          },
          {
            expression: `!(${isPod}) || (object.spec == oldObject.spec && ${SAME_OWNERS} && size(variables.changedPodKeys) == 0)`,
            messageExpression: `'the node agent may change only the ${ANNOTATION.gpuAllocated} annotation of pod ' + oldObject.metadata.namespace + '/' + oldObject.metadata.name + (object.spec == oldObject.spec ? '' : ', not its spec') + (size(variables.changedPodKeys) == 0 ? '' : ', not ' + variables.changedPodKeys.join(', '))`,
            reason: 'Forbidden',
          },
        ],
      },
    },
  };
}

function workloadsPolicy(): Doc {
  return {
    file: 'admissionpolicy-workloads.yaml',
    when: 'controllers.enabled',
    body: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: POLICY_NAMES.workloads, labels: policyLabels('controllers') },
      spec: {
        failurePolicy: 'Fail',
        // The objects themselves, not /status or /scale: the controllers' status writes and a replica count
        // through /scale (authorized on its own) change no pod template.
        matchConstraints: {
          resourceRules: [{ apiGroups: [API_GROUP], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: [...POD_MAKING_KINDS] }],
        },
        // An update that leaves the spec alone (annotations: checkpoint requests, activation stamps) makes no pod.
        matchConditions: [{ name: 'makes-pods', expression: "request.operation == 'CREATE' || object.?spec != oldObject.?spec" }],
        validations: [
          {
            expression: "authorizer.group('').resource('pods').namespace(request.namespace).check('create').allowed()",
            messageExpression:
              "request.userInfo.username + ' may not create pods in namespace ' + request.namespace + ', and the SITS controllers make pods from a ' + request.kind.kind + ' spec: creating one or changing its spec needs the right to create pods there (RBAC: create on pods)'",
            reason: 'Forbidden',
          },
        ],
      },
    },
  };
}

const binding = (file: string, when: string, policy: string, component: string): Doc => ({
  file,
  when,
  body: {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: policy, labels: policyLabels(component) },
    spec: { policyName: policy, validationActions: ['Deny'] },
  },
});

/** `serviceAccount`: the node agent's, in nodeAgent.namespace. */
export function nodeAgentPolicyDocs(serviceAccount: string): Doc[] {
  return [nodeAgentPolicy(serviceAccount), binding('admissionpolicybinding-node-agent.yaml', 'nodeAgent.enabled', POLICY_NAMES.nodeAgent, 'node-agent')];
}

export function workloadPolicyDocs(): Doc[] {
  return [workloadsPolicy(), binding('admissionpolicybinding-workloads.yaml', 'controllers.enabled', POLICY_NAMES.workloads, 'controllers')];
}

function webhookSecretPolicy(serviceAccount: string, secret: string): Doc {
  return {
    file: 'admissionpolicy-webhook-secret.yaml',
    when: 'webhook.enabled',
    body: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: POLICY_NAMES.webhookSecret, labels: policyLabels('webhook') },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: ['secrets'] }] },
        matchConditions: [
          { name: 'webhook', expression: concat("request.userInfo.username == 'system:serviceaccount:", raw(RELEASE_NAMESPACE), `:${serviceAccount}'`) },
        ],
        validations: [
          {
            expression: `object.metadata.name == '${secret}' && object.?type.orValue('') == 'kubernetes.io/tls'`,
            messageExpression: `'the webhook may write only its serving-certificate Secret ${secret} of type kubernetes.io/tls, not ' + object.metadata.name + ' of type ' + object.?type.orValue('Opaque')`,
            reason: 'Forbidden',
          },
        ],
      },
    },
  };
}

/** `serviceAccount` and `secret`: the webhook's (in the release namespace). */
export function webhookSecretPolicyDocs(serviceAccount: string, secret: string): Doc[] {
  return [
    webhookSecretPolicy(serviceAccount, secret),
    binding('admissionpolicybinding-webhook-secret.yaml', 'webhook.enabled', POLICY_NAMES.webhookSecret, 'webhook'),
  ];
}
