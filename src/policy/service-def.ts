// The Ranger service definition served with every policy download: the resource hierarchy and
// access types of the platform's query engine (Trino's Ranger plugin model:
// catalog > schema > table > column). Engine plugins evaluate the downloaded policies with it.
export const SERVICE_TYPE = 'trino';

export const RESOURCES = ['catalog', 'schema', 'table', 'column'] as const;
export type ResourceName = (typeof RESOURCES)[number];

export const ACCESS_TYPES = [
  'select', 'insert', 'delete', 'update', 'ownership', 'create', 'drop', 'alter', 'show', 'impersonate', 'execute', 'all',
] as const;

const matcher = 'org.apache.ranger.plugin.resourcematcher.RangerDefaultResourceMatcher';

export function serviceDef() {
  return {
    id: 203,
    name: SERVICE_TYPE,
    displayName: 'trino',
    implClass: 'org.apache.ranger.services.trino.RangerServiceTrino',
    label: 'Trino',
    description: 'Trino',
    isEnabled: true,
    version: 1,
    options: { enableDenyAndExceptionsInPolicies: 'true' },
    configs: [],
    resources: RESOURCES.map((name, i) => ({
      itemId: i + 1,
      name,
      type: 'string',
      level: (i + 1) * 10,
      parent: i === 0 ? '' : RESOURCES[i - 1],
      mandatory: true,
      lookupSupported: false,
      recursiveSupported: false,
      excludesSupported: true,
      matcher,
      matcherOptions: { wildCard: 'true', ignoreCase: 'true' },
      validationRegEx: '',
      validationMessage: '',
      uiHint: '',
      label: name[0].toUpperCase() + name.slice(1),
      description: name,
      accessTypeRestrictions: [],
      isValidLeaf: true,
    })),
    accessTypes: ACCESS_TYPES.map((name, i) => ({
      itemId: i + 1,
      name,
      label: name,
      impliedGrants: name === 'all' ? ACCESS_TYPES.filter((a) => a !== 'all') : [],
    })),
    policyConditions: [],
    contextEnrichers: [],
    enums: [],
    dataMaskDef: { maskTypes: [], accessTypes: [], resources: [] },
    rowFilterDef: { accessTypes: [], resources: [] },
  };
}
