// The template scanner and expression parser, as pure functions: linear in the input, bounded in
// depth, size and cache bytes, and masking what a render read through secret().
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkTemplates, render, scanTemplate, templateCacheBytes, TEMPLATE_LIMITS, type TemplateFunctions } from '../src/workflows/template.js';

const fns = (secrets: Record<string, string> = {}): TemplateFunctions => ({
  secret: async (name) => { if (!(name in secrets)) throw new Error(`no secret ${name}`); return secrets[name]; },
  read: async (path) => `file ${path}`,
});

test('the scanner splits text and expressions; an unclosed {{ is text', () => {
  assert.deepEqual(scanTemplate('a {{ x }} b {{y}}'), [{ text: 'a ' }, { expr: ' x ' }, { text: ' b ' }, { expr: 'y' }]);
  assert.deepEqual(scanTemplate('{{ a }}}}'), [{ expr: ' a ' }, { text: '}}' }]);
  assert.deepEqual(scanTemplate('x {{ open'), [{ text: 'x {{ open' }]);
  assert.throws(() => scanTemplate('{{}}'), /an empty \{\{ \}\}/);
});

test('100,000 unclosed {{ are scanned in one pass (the lazy regex took seconds)', () => {
  const s = '{{'.repeat(100_000);
  assert.deepEqual(scanTemplate(s), [{ text: s }]);
  assert.equal(checkTemplates({ message: s }), null);
  // Each {{ closed by one far }}: the scanner resumes after it, never rescans.
  assert.equal(scanTemplate(`${'{{'.repeat(50_000)} x }}`).length, 1);
});

test('deep nesting in an expression is a problem, never a stack overflow', () => {
  for (const expr of ['('.repeat(20_000) + '1' + ')'.repeat(20_000), '!'.repeat(50_000) + 'true', 'a' + '[a'.repeat(20_000) + ']'.repeat(20_000), 'f('.repeat(20_000)]) {
    const p = checkTemplates({ message: `{{ ${expr} }}` }, 'tasks[0]');
    assert.ok(p, 'reported');
    assert.doesNotMatch(p.message, /call stack/);
    assert.match(p.message, /at most/);
  }
  const chain = checkTemplates({ message: `{{ ${Array.from({ length: 1000 }, () => 'a').join('||')} }}` });
  assert.match(chain!.message, /at most 512 tokens/);
  assert.match(checkTemplates({ message: `{{ '${'x'.repeat(5000)}' }}` })!.message, /at most 4096 characters/);
});

test('values nested deeper than the limit are refused by a render, and checked without recursion', async () => {
  let deep: unknown = '{{ 1 }}';
  for (let i = 0; i < 100_000; i++) deep = [deep];
  assert.equal(checkTemplates(deep), null, 'checked without overflowing the stack');
  await assert.rejects(render(deep, {}, fns()), /values nest at most 64 levels/);
});

test('a render produces at most renderChars characters', async () => {
  const ctx = { inputs: { big: 'x'.repeat(1024 * 1024) } };
  const many = Array.from({ length: 20 }, () => '{{ inputs.big }}').join('');
  await assert.rejects(render({ a: many }, ctx, fns()), /a render produces at most/);
  assert.equal(((await render({ a: '{{ inputs.big }}' }, ctx, fns())) as { a: string }).a.length, 1024 * 1024);
});

test('the compiled-expression cache stays within its byte bound', () => {
  for (let i = 0; i < 3000; i++) checkTemplates({ m: `{{ inputs.a${i} == '${String(i).padStart(2000, 'x')}' }}` });
  assert.ok(templateCacheBytes() > 0);
  assert.ok(templateCacheBytes() <= TEMPLATE_LIMITS.cacheBytes, `${templateCacheBytes()} bytes`);
});

test('a render masks the secrets it read, in its value and its errors; a task render reveals them', async () => {
  const f = fns({ TOKEN: 'tok-very-secret', PIN: '42' });
  assert.deepEqual(await render(['{{ secret("TOKEN") }}', 'a {{ secret("TOKEN") }} b', '{{ secret("PIN") }}', 'k'], {}, f), ['******', 'a ****** b', '******', 'k']);
  assert.deepEqual(await render({ v: '{{ secret("TOKEN") }}' }, {}, f, { reveal: true }), { v: 'tok-very-secret' });
  const failing: TemplateFunctions = { ...f, read: async (p) => { throw new Error(`file does not exist: ${p}`); } };
  await assert.rejects(render('{{ read(secret("TOKEN")) }}', {}, failing), (e: Error) => e.message === 'file does not exist: ******');
});
