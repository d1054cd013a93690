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

/** Row filters name a table: catalog > schema > table. */
export const ROW_FILTER_RESOURCES = ['catalog', 'schema', 'table'] as const;

/**
 * The mask types of Ranger's Trino service (names as Ranger spells them); `{col}` and `{type}` in
 * a transformer are the column and its type. CUSTOM takes the policy item's own expression.
 */
export const MASK_TYPES: ReadonlyArray<{ name: string; label: string; transformer?: string }> = [
  { name: 'MASK', label: 'Redact: lowercase to x, uppercase to X, digits to 0', transformer: "cast(regexp_replace(regexp_replace(regexp_replace({col}, '([A-Z])', 'X'), '([a-z])', 'x'), '([0-9])', '0') as {type})" },
  { name: 'MASK_SHOW_LAST_4', label: 'Partial mask: show the last 4 characters', transformer: "cast(regexp_replace({col}, '(.*)(.{4}$)', x -> regexp_replace(x[1], '.', 'X') || x[2]) as {type})" },
  { name: 'MASK_SHOW_FIRST_4', label: 'Partial mask: show the first 4 characters', transformer: "cast(regexp_replace({col}, '(^.{4})(.*)', x -> x[1] || regexp_replace(x[2], '.', 'X')) as {type})" },
  { name: 'MASK_HASH', label: 'Hash (SHA-256)', transformer: 'cast(to_hex(sha256(to_utf8({col}))) as {type})' },
  { name: 'MASK_NULL', label: 'Nullify' },
  { name: 'MASK_NONE', label: 'Unmasked (the original value)' },
  { name: 'MASK_DATE_SHOW_YEAR', label: 'Date: show only the year', transformer: "date_trunc('year', {col})" },
  { name: 'CUSTOM', label: 'Custom expression' },
];

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
    // Column masks and row filters (policy types 1 and 2): Trino's plugin applies them on
    // `select`; mask names are Ranger's, so policies written for Ranger's Trino service work.
    dataMaskDef: {
      accessTypes: [{ itemId: 1, name: 'select', label: 'select', impliedGrants: [] }],
      resources: RESOURCES.map((name, i) => subResource(name, i)),
      maskTypes: MASK_TYPES.map((m, i) => ({ itemId: i + 1, name: m.name, label: m.label, description: m.label, ...(m.transformer ? { transformer: m.transformer } : {}), dataMaskOptions: {} })),
    },
    rowFilterDef: {
      accessTypes: [{ itemId: 1, name: 'select', label: 'select', impliedGrants: [] }],
      resources: ROW_FILTER_RESOURCES.map((name, i) => subResource(name, i)),
    },
  };
}

/** A resource of the mask or row-filter definition: one value per level (Ranger's `singleValue`). */
function subResource(name: ResourceName, i: number) {
  return {
    itemId: i + 1, name, type: 'string', level: (i + 1) * 10, parent: i === 0 ? '' : RESOURCES[i - 1], mandatory: true,
    lookupSupported: false, recursiveSupported: false, excludesSupported: false, matcher,
    matcherOptions: { wildCard: 'true', ignoreCase: 'true' }, uiHint: '{ "singleValue":true }', label: name, description: name,
  };
}
