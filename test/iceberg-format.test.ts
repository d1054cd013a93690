// The Iceberg format core's values, against the specification's own examples: Appendix B's hash
// test values (bucket[N]), the truncate examples, the temporal transforms around 1970, the binary
// and JSON single-value serializations (Appendix D), the order of strings by code point, schema
// parsing. Pure functions: no service runs.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { applyTransform, canTransform, hashValue, murmur3, parseTransform } from '../src/iceberg/transforms.js';
import { compareStrings, compareValues, fromBytes, fromJsonValue, toBytes, toJsonValue, type Value } from '../src/iceberg/values.js';
import { parsePrimitive, parseSchema, findField } from '../src/iceberg/types.js';
import type { PrimitiveType } from '../src/iceberg/types.js';

const T = (s: string) => parsePrimitive(s)!;
const j = (t: string, v: unknown) => fromJsonValue(T(t), v);

describe('bucket hashing (Appendix B test values)', () => {
  const cases: Array<[string, unknown, number]> = [
    ['int', 34, 2017239379],
    ['long', 34, 2017239379],
    ['decimal(4,2)', '14.20', -500754589],
    ['date', '2017-11-16', -653330422],
    ['time', '22:31:08', -662762989],
    ['timestamp', '2017-11-16T22:31:08', -2047944441],
    ['timestamp', '2017-11-16T22:31:08.000001', -1207196810],
    ['timestamptz', '2017-11-16T14:31:08-08:00', -2047944441],
    ['timestamptz', '2017-11-16T14:31:08.000001-08:00', -1207196810],
    ['timestamp_ns', '2017-11-16T22:31:08', -2047944441],
    ['timestamp_ns', '2017-11-16T22:31:08.000001001', -1207196810],
    ['timestamptz_ns', '2017-11-16T14:31:08.000001001-08:00', -1207196810],
    ['string', 'iceberg', 1210000089],
    ['uuid', 'f79c3e09-677c-4bbd-a479-3f349cb785e7', 1488055340],
    ['fixed[4]', '00010203', -188683207],
    ['binary', '00010203', -188683207],
  ];
  for (const [type, v, hash] of cases) {
    test(`${type} ${String(v)} hashes to ${hash}`, () => assert.equal(hashValue(T(type), j(type, v)), hash));
  }
  test('murmur3 of the empty input and tails of 1 to 3 bytes (reference values of the x86_32 variant)', () => {
    assert.equal(murmur3(new Uint8Array()), 0);
    assert.equal(murmur3(Buffer.from('a')) >>> 0, 0x3c2569b2);
    assert.equal(murmur3(Buffer.from('ab')) >>> 0, 0x9bbfd75f);
    assert.equal(murmur3(Buffer.from('abc')) >>> 0, 0xb3dd93fa);
    assert.equal(murmur3(Buffer.from('abcd')) >>> 0, 0x43ed676a);
  });
  test('bucket[N] drops the sign bit before the modulus', () => {
    const t = parseTransform('bucket[16]');
    assert.equal(applyTransform(t, T('int'), 34), 2017239379 % 16);
    assert.equal(applyTransform(t, T('string'), 'iceberg'), 1210000089 % 16);
    assert.equal(applyTransform(t, T('date'), j('date', '2017-11-16')), (-653330422 & 0x7fffffff) % 16);
    assert.equal(applyTransform(t, T('int'), null), null);
  });
});

describe('truncate, temporal and void transforms', () => {
  test('the specification\'s truncate examples', () => {
    assert.equal(applyTransform(parseTransform('truncate[10]'), T('int'), 1), 0);
    assert.equal(applyTransform(parseTransform('truncate[10]'), T('int'), -1), -10);
    assert.equal(applyTransform(parseTransform('truncate[10]'), T('long'), -1n), -10n);
    assert.equal(toJsonValue(T('decimal(9,2)'), applyTransform(parseTransform('truncate[50]'), T('decimal(9,2)'), j('decimal(9,2)', '10.65'))!), '10.50');
    assert.equal(applyTransform(parseTransform('truncate[3]'), T('string'), 'iceberg'), 'ice');
    assert.equal(applyTransform(parseTransform('truncate[2]'), T('string'), '😀😁😂'), '😀😁', 'code points, not UTF-16 units');
    assert.deepEqual([...applyTransform(parseTransform('truncate[3]'), T('binary'), Uint8Array.of(1, 2, 3, 4, 5)) as Uint8Array], [1, 2, 3]);
  });
  test('year, month, day, hour count from 1970 and floor before it', () => {
    const ts = j('timestamp', '2017-11-16T22:31:08');
    assert.equal(applyTransform(parseTransform('year'), T('timestamp'), ts), 47);
    assert.equal(applyTransform(parseTransform('month'), T('timestamp'), ts), 47 * 12 + 10);
    assert.equal(applyTransform(parseTransform('day'), T('timestamp'), ts), j('date', '2017-11-16'));
    assert.equal(applyTransform(parseTransform('hour'), T('timestamp'), ts), 17486 * 24 + 22);
    const before = j('timestamp', '1969-12-31T23:59:59.999999');
    assert.equal(applyTransform(parseTransform('year'), T('timestamp'), before), -1);
    assert.equal(applyTransform(parseTransform('month'), T('timestamp'), before), -1);
    assert.equal(applyTransform(parseTransform('day'), T('timestamp'), before), -1);
    assert.equal(applyTransform(parseTransform('hour'), T('timestamp'), before), -1);
    assert.equal(applyTransform(parseTransform('day'), T('timestamp_ns'), j('timestamp_ns', '1969-12-31T00:00:00.000000001')), -1);
    assert.equal(applyTransform(parseTransform('month'), T('date'), j('date', '1969-01-31')), -12);
    assert.equal(applyTransform(parseTransform('void'), T('string'), 'x'), null);
  });
  test('which source types each transform takes', () => {
    assert.ok(canTransform(parseTransform('bucket[2]'), T('uuid')));
    assert.ok(!canTransform(parseTransform('bucket[2]'), T('float')));
    assert.ok(!canTransform(parseTransform('hour'), T('date')));
    assert.ok(canTransform(parseTransform('day'), T('timestamptz_ns')));
    assert.ok(!canTransform(parseTransform('truncate[2]'), T('fixed[3]')));
    assert.ok(!canTransform(parseTransform('identity'), T('geometry')));
    assert.equal(parseTransform('zorder').kind, 'unknown');
  });
});

describe('single-value serialization (Appendix D)', () => {
  const roundTrip: Array<[string, unknown, string]> = [
    ['boolean', true, '01'], ['int', 34, '22000000'], ['long', 34, '2200000000000000'], ['float', 1, '0000803f'],
    ['double', 1, '000000000000f03f'], ['date', '2017-11-16', '4e440000'], ['string', 'iceberg', '6963656265726766'.slice(0, 14)],
    ['uuid', 'f79c3e09-677c-4bbd-a479-3f349cb785e7', 'f79c3e09677c4bbda4793f349cb785e7'], ['decimal(4,2)', '14.20', '058c'],
    ['decimal(9,2)', '-0.01', 'ff'], ['binary', '00FF', '00ff'],
  ];
  for (const [type, json, hex] of roundTrip) {
    test(`${type} ${String(json)} <-> ${hex}`, () => {
      const v = j(type, json);
      assert.equal(Buffer.from(toBytes(T(type), v)).toString('hex'), hex);
      assert.equal(compareValues(fromBytes(T(type), Buffer.from(hex, 'hex'))!, v), 0);
    });
  }
  test('bounds written before a type promotion keep their width', () => {
    assert.equal(fromBytes(T('long'), Buffer.from('22000000', 'hex')), 34n);
    assert.equal(fromBytes(T('double'), Buffer.from('0000803f', 'hex')), 1);
    assert.equal(fromBytes(T('timestamp'), Buffer.from('4e440000', 'hex')), j('timestamp', '2017-11-16T00:00:00'));
  });
  test('JSON single values as the specification writes them', () => {
    const out = (t: string, v: unknown) => toJsonValue(T(t), j(t, v));
    assert.equal(out('decimal(4,2)', '14.20'), '14.20');
    assert.equal(out('decimal(4,2)', 14.2), '14.20');
    assert.equal(toJsonValue(T('decimal(3,-20)'), 2n), '2E+20');
    assert.equal(out('date', '2017-11-16'), '2017-11-16');
    assert.equal(out('time', '22:31:08.123456'), '22:31:08.123456');
    assert.equal(out('timestamp', '2017-11-16T22:31:08.123456'), '2017-11-16T22:31:08.123456');
    assert.equal(out('timestamptz', '2017-11-16T14:31:08.123456-08:00'), '2017-11-16T22:31:08.123456+00:00');
    assert.equal(out('timestamp_ns', '2017-11-16T22:31:08.123456789'), '2017-11-16T22:31:08.123456789');
    assert.equal(out('timestamp', '1969-12-31T23:59:59.5'), '1969-12-31T23:59:59.500000');
    assert.equal(out('uuid', 'F79C3E09-677C-4BBD-A479-3F349CB785E7'), 'f79c3e09-677c-4bbd-a479-3f349cb785e7');
    assert.equal(out('fixed[2]', '00ff'), '00FF');
    assert.equal(out('long', '9223372036854775807'), 9223372036854775807n);
  });
  test('what does not convert is refused with the type named', () => {
    assert.throws(() => j('int', 'x'), /"x" is not a value of type int/);
    assert.throws(() => j('decimal(4,2)', '1.234'), /more digits after the point than the scale 2/);
    assert.throws(() => j('timestamptz', '2017-11-16T22:31:08'), /needs a zone offset/);
    assert.throws(() => j('timestamp', '2017-11-16T22:31:08Z'), /takes no zone offset/);
    assert.throws(() => j('date', '2017-02-30'), /not a valid date/);
    assert.throws(() => j('fixed[3]', '00ff'), /2 bytes, not the 3/);
  });
});

describe('order and schemas', () => {
  test('strings order by code point, as UTF-8 bytes do', () => {
    const a = '\uffff';
    const b = '😀'; // U+1F600: above U+FFFF, a surrogate pair in UTF-16
    assert.ok(!(a < b), 'UTF-16 order puts the surrogate first');
    assert.ok(compareStrings(a, b) < 0);
    assert.equal(Math.sign(compareStrings(a, b)), Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b))));
    assert.ok(compareStrings('ab', 'abc') < 0);
  });
  test('floats order -0.0 before +0.0 and NaN last', () => {
    const xs: Value[] = [Number.NaN, 0, -0, -1, 1];
    assert.deepEqual(xs.sort(compareValues).map((x) => Object.is(x, -0) ? '-0' : String(x)), ['-1', '-0', '0', '1', 'NaN']);
  });
  test('a schema indexes full names; case-insensitive lookup refuses an ambiguous name', () => {
    const s = parseSchema({ type: 'struct', 'schema-id': 3, fields: [
      { id: 1, name: 'Breed Name', type: 'string', required: false },
      { id: 2, name: 'loc', type: { type: 'struct', fields: [{ id: 3, name: 'lat', type: 'double', required: true }] }, required: false },
      { id: 4, name: 'm', type: { type: 'map', 'key-id': 5, key: 'string', 'value-id': 6, value: 'int', 'value-required': false }, required: false },
      { id: 7, name: 'A', type: 'int', required: false }, { id: 8, name: 'a', type: 'int', required: false },
    ] });
    assert.equal(s.schemaId, 3);
    assert.equal(findField(s, 'breed name', false)?.id, 1);
    assert.equal(findField(s, 'breed name', true), undefined);
    assert.equal(findField(s, 'loc.lat', true)?.id, 3);
    assert.equal(findField(s, 'm.value', true)?.repeated, true);
    assert.equal(findField(s, 'a', false), undefined, 'A and a are the same name without case');
    assert.equal((findField(s, 'm.key', true)?.type as PrimitiveType).type, 'string');
  });
});
