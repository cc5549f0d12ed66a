/** kube's node and label selectors, as pods, PersistentVolumes and claims carry them. */

/** A node selector requirement (kube's NodeSelectorRequirement); Gt/Lt compare integers. */
export interface NodeSelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';
  readonly values?: readonly string[];
}

/** Expressions over labels and fields (`metadata.name` only), all of which must match; an empty term matches nothing. */
export interface NodeSelectorTerm {
  readonly matchExpressions?: readonly NodeSelectorRequirement[];
  readonly matchFields?: readonly NodeSelectorRequirement[];
}

/** A label selector requirement (kube's metav1.LabelSelectorRequirement). */
export interface LabelSelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  readonly values?: readonly string[];
}

/** metav1.LabelSelector: all of matchLabels and matchExpressions; an empty selector matches everything. */
export interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly LabelSelectorRequirement[];
}
