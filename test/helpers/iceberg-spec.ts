// Validates catalog answers against the schemas of the Iceberg REST catalog specification
// (test/fixtures/iceberg-rest-catalog-open-api.yaml: apache/iceberg open-api/, Apache-2.0,
// commit 7f879b11366e17a676a03f15247a821751415529).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { Ajv2020 } from 'ajv/dist/2020.js';

const spec = parse(readFileSync(fileURLToPath(new URL('../fixtures/iceberg-rest-catalog-open-api.yaml', import.meta.url)), 'utf8')) as Record<string, unknown>;
const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: false });
ajv.addSchema({ $id: 'iceberg', components: spec.components } as never);
const compiled = new Map<string, ReturnType<typeof ajv.compile>>();

/** Asserts that `data` is a valid `#/components/schemas/<name>` of the specification. */
export function assertSpec(name: string, data: unknown): void {
  let v = compiled.get(name);
  if (!v) { v = ajv.compile({ $ref: `iceberg#/components/schemas/${name}` }); compiled.set(name, v); }
  if (!v(data)) assert.fail(`not a valid ${name}: ${ajv.errorsText(v.errors)}\n${JSON.stringify(data).slice(0, 2000)}`);
}
