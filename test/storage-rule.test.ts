// The storage rule without services (src/storage: layout.ts, ownership.ts, s3-request.ts,
// delete-objects.ts): who owns which key of the bucket, family first; which operations are
// allowed; how an S3 request a client asks svc to sign is read (host, escapes, query, headers, a
// bulk delete's body); and the startup check that keeps the families apart.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { defaultConfig, startupChecks, ConfigError, type Config } from '../src/config/index.js';
import { classify, layoutProblem, owns, storageLayout, warehouseProblem, type StorageLayout } from '../src/storage/layout.js';
import { authorize, StorageRefused, type StorageOp } from '../src/storage/ownership.js';
import { parseS3Request, type SignInput } from '../src/storage/s3-request.js';
import { deleteObjectsKeys } from '../src/storage/delete-objects.js';
import { DomainError } from '../src/errors.js';

const A = { id: '0b9f2a4e-5d1c-4c1e-9a57-2f1f1d1e0a01', slug: 'alpha' };
const B = { id: '7c3e9d10-2b6a-4f3b-8e21-6a0d9c4b5e02', slug: 'beta' };

function config(over: (c: Config) => void = () => {}): Config {
  const c = defaultConfig();
  c.storage.access_key = 'ak';
  c.storage.secret_key = 'sk';
  over(c);
  return c;
}
/** The default layout: warehouse at the bucket root, query-results/, apps/, workflow/. */
const root = storageLayout(config());

/** The status a call fails with (400 or 403), or 200 when it passes. */
function status(fn: () => unknown): number {
  try { fn(); return 200; } catch (err) {
    assert.ok(err instanceof DomainError, String(err));
    return err.status;
  }
}

describe('the layout: family first, then the owner segment', () => {
  test('each family is owned by the id (results, apps, workflow) or the slug (catalog) svc records', () => {
    assert.deepEqual(classify(root, `query-results/${A.id}/q.parquet`), { family: 'results', owner: A.id });
    assert.deepEqual(classify(root, `apps/${A.id}/app/draft`), { family: 'apps', owner: A.id });
    assert.deepEqual(classify(root, `workflow/${A.id}/namespaces/n/files/f`), { family: 'workflow', owner: A.id });
    assert.deepEqual(classify(root, 'alpha/ns/t/data/f.parquet'), { family: 'catalog', owner: 'alpha' });
    assert.equal(owns(root, A, 'alpha/ns/t/data/f.parquet'), true);
    assert.equal(owns(root, B, 'alpha/ns/t/data/f.parquet'), false);
    assert.equal(owns(root, A, 'alpha-eu/ns/t'), false, 'a sibling slug sharing the first letters');
    assert.equal(owns(root, A, 'alpha'), false, 'the root without its slash names alpha-eu too');
    assert.equal(owns(root, A, `apps/${A.id}/x/draft`), true);
    assert.equal(owns(root, B, `apps/${A.id}/x/draft`), false);
    assert.equal(owns(root, A, '/alpha/x'), false);
  });

  test('a workspace named like another family\'s prefix owns nothing of it; its warehouse is refused', () => {
    for (const slug of ['apps', 'query-results', 'workflow']) {
      const tenant = { id: B.id, slug };
      assert.match(warehouseProblem(root, slug)!, new RegExp(`warehouse of workspace ${slug}`));
      assert.equal(owns(root, tenant, `${slug}/${A.id}/anything`), false, slug);
      assert.equal(owns(root, tenant, `${slug}/`), false, slug);
    }
    assert.equal(warehouseProblem(root, 'apps-2'), null);
    assert.equal(owns(root, { id: B.id, slug: 'apps-2' }, 'apps-2/t/f'), true);
    // A slug that is another workspace's id owns that id's catalog-free keys of no family.
    assert.equal(owns(root, { id: B.id, slug: A.id }, `query-results/${A.id}/q.parquet`), false);
  });

  test('overlapping prefixes and a warehouse inside another family are refused at startup', () => {
    assert.equal(layoutProblem(root), null);
    assert.equal(layoutProblem(storageLayout(config((c) => { c.catalog.warehouse = 's3://warehouse/lake'; }))), null);
    const cases: Array<[string, (c: Config) => void, RegExp]> = [
      ['apps inside workflow', (c) => { c.apps.storage.prefix = 'workflow/apps/'; }, /apps\.storage\.prefix "workflow\/apps\/" and workflow\.storage\.prefix "workflow\/" overlap/],
      ['results equal to apps', (c) => { c.engine.results_prefix = 'apps'; }, /engine\.results_prefix "apps\/" and apps\.storage\.prefix "apps\/" overlap/],
      ['warehouse inside results', (c) => { c.catalog.warehouse = 's3://warehouse/query-results/lake'; }, /catalog\.warehouse \(key prefix "query-results\/lake\/"\) lies inside engine\.results_prefix/],
    ];
    for (const [what, change, message] of cases) {
      const c = config(change);
      assert.match(layoutProblem(storageLayout(c))!, message, what);
      try { startupChecks(c); assert.fail(what); } catch (err) {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, /^engine\.results_prefix, apps\.storage\.prefix and workflow\.storage\.prefix must not overlap, nor hold catalog\.warehouse: /);
      }
    }
  });
});

describe('authorize: one decision for every storage operation', () => {
  const ok = (l: StorageLayout, op: StorageOp, within?: string) => status(() => authorize(l, { tenant: B, within }, op));
  test('reads and writes inside the tenant\'s roots; nothing outside them', () => {
    assert.equal(authorize(root, { tenant: B }, { name: 'GetObject', key: 'beta/t/f' }), 'read');
    assert.equal(authorize(root, { tenant: B }, { name: 'PutObject', key: `apps/${B.id}/x/draft` }), 'write');
    assert.equal(authorize(root, { tenant: B }, { name: 'ListObjectsV2', prefix: `workflow/${B.id}/` }), 'read');
    for (const op of [
      { name: 'GetObject', key: 'alpha/t/f' }, { name: 'DeleteObject', key: `apps/${A.id}/x/draft` },
      { name: 'ListObjectsV2', prefix: 'alpha/' }, { name: 'ListObjectsV2', prefix: '' }, { name: 'DeletePrefix', prefix: `query-results/${A.id}/` },
      { name: 'Vend', prefix: 'alpha/t/' }, { name: 'DeleteObjects', keys: ['beta/t/f', 'alpha/t/f'] },
    ] as StorageOp[]) assert.equal(ok(root, op), 403, JSON.stringify(op));
  });

  test('within a table location: keys under it only, and a listing under its folder', () => {
    assert.equal(ok(root, { name: 'GetObject', key: 'beta/ns/t/data/f' }, 'beta/ns/t'), 200);
    assert.equal(ok(root, { name: 'ListObjectsV2', prefix: 'beta/ns/t/data/' }, 'beta/ns/t'), 200);
    assert.equal(ok(root, { name: 'ListObjectsV2', prefix: 'beta/ns/t' }, 'beta/ns/t'), 403, 'would list beta/ns/t2 too');
    assert.equal(ok(root, { name: 'GetObject', key: 'beta/ns/t2/f' }, 'beta/ns/t'), 403);
    assert.equal(ok(root, { name: 'GetObject', key: 'alpha/ns/t/f' }, 'alpha/ns/t'), 403, 'a location in another workspace narrows nothing open');
  });

  test('dot segments, control characters, long keys and empty or huge bulk deletes are refused', () => {
    for (const key of ['beta/t/../../alpha/x', 'beta/./x', 'beta/t/a\nb', `beta/${'x'.repeat(1100)}`]) {
      assert.equal(ok(root, { name: 'GetObject', key }), 403, key);
    }
    assert.equal(ok(root, { name: 'DeleteObjects', keys: [] }), 403);
    assert.equal(ok(root, { name: 'DeleteObjects', keys: Array.from({ length: 1001 }, (_, i) => `beta/t/${i}`) }), 403);
  });
});

describe('parseS3Request: the allow-list of what svc signs', () => {
  const st = { endpoint: 'http://127.0.0.1:9000', region: 'us-east-1', bucket: 'warehouse' };
  const req = (method: string, uri: string, headers: Record<string, string[]> = {}, body?: string): SignInput => ({ method, uri, headers, body });
  const parse = (r: SignInput, s = st) => parseS3Request(s, r);
  const code = (r: SignInput, s = st) => status(() => parse(r, s));

  test('path-style on the endpoint, virtual-hosted on it; any other host is refused', () => {
    assert.deepEqual(parse(req('GET', 'http://127.0.0.1:9000/warehouse/beta/t/f')).op, { name: 'GetObject', key: 'beta/t/f' });
    const minio = { ...st, endpoint: 'http://minio.test:9000' };
    assert.deepEqual(parse(req('GET', 'http://warehouse.minio.test:9000/beta/t/f'), minio).op, { name: 'GetObject', key: 'beta/t/f' });
    assert.deepEqual(parse(req('GET', 'http://MINIO.test:9000/warehouse/beta/t/f'), minio).op, { name: 'GetObject', key: 'beta/t/f' });
    assert.equal(code(req('GET', 'http://other.minio.test:9000/warehouse/beta/t/f'), minio), 403);
    assert.equal(code(req('GET', 'http://otherbucket.s3.amazonaws.com/warehouse/beta/t/f')), 403);
    assert.equal(code(req('GET', 'http://warehouse.evil.example/beta/t/f')), 403);
    assert.equal(code(req('GET', 'http://127.0.0.1:9001/warehouse/beta/t/f')), 403);
    assert.equal(code(req('GET', 'http://127.0.0.1:9000/other/beta/t/f')), 403);
    const aws = { endpoint: '', region: 'eu-west-1', bucket: 'warehouse' };
    assert.equal(code(req('GET', 'https://warehouse.s3.eu-west-1.amazonaws.com/beta/t/f'), aws), 200);
    assert.equal(code(req('GET', 'https://s3.eu-west-1.amazonaws.com/warehouse/beta/t/f'), aws), 200);
    assert.equal(code(req('GET', 'https://otherbucket.s3.eu-west-1.amazonaws.com/warehouse/beta/t/f'), aws), 403);
  });

  test('escapes are decoded once, strictly: a malformed one is a 400', () => {
    assert.deepEqual(parse(req('GET', 'http://127.0.0.1:9000/warehouse/beta/t/a%20b%2Fc')).op, { name: 'GetObject', key: 'beta/t/a b/c' });
    assert.equal(code(req('GET', 'http://127.0.0.1:9000/warehouse/beta/t/%zz')), 400);
    assert.equal(code(req('GET', 'http://127.0.0.1:9000/warehouse/beta/t/%E0%A4%A')), 400);
    assert.equal(code(req('GET', 'http://127.0.0.1:9000/warehouse?list-type=2&prefix=beta%zz')), 400);
    assert.equal(code(req('GET', 'not a url')), 400);
    assert.equal(code(req('GET', 'ftp://127.0.0.1:9000/warehouse/beta/t/f')), 400);
  });

  test('operations by method and query; subresources and copies are refused', () => {
    const u = 'http://127.0.0.1:9000/warehouse/beta/t/f';
    assert.equal(parse(req('PUT', `${u}?partNumber=2&uploadId=u1`)).op.name, 'UploadPart');
    assert.equal(parse(req('POST', `${u}?uploads`)).op.name, 'CreateMultipartUpload');
    assert.equal(parse(req('POST', `${u}?uploadId=u1`)).op.name, 'CompleteMultipartUpload');
    assert.equal(parse(req('DELETE', `${u}?uploadId=u1`)).op.name, 'AbortMultipartUpload');
    assert.equal(parse(req('GET', `${u}?x-id=GetObject`)).op.name, 'GetObject');
    assert.deepEqual(parse(req('GET', 'http://127.0.0.1:9000/warehouse?list-type=2&prefix=beta/t/')).op, { name: 'ListObjectsV2', prefix: 'beta/t/' });
    for (const [method, uri] of [
      ['PUT', `${u}?acl`], ['GET', `${u}?acl`], ['PUT', `${u}?tagging`], ['GET', 'http://127.0.0.1:9000/warehouse?policy'],
      ['PUT', 'http://127.0.0.1:9000/warehouse?policy'], ['GET', 'http://127.0.0.1:9000/warehouse?list-type=2'], ['GET', 'http://127.0.0.1:9000/warehouse?prefix=beta/'],
      ['GET', `${u}?x-id=PutObject`], ['PATCH', u], ['OPTIONS', u], ['POST', u], ['PUT', `${u}?retention`], ['GET', 'http://127.0.0.1:9000/warehouse'],
    ]) assert.equal(code(req(method!, uri!)), 403, `${method} ${uri}`);
    assert.equal(code(req('GET', `${u}?versionId=1&versionId=2`)), 400);
  });

  test('x-amz-* headers from an allow-list; copy sources, redirects, ACLs and tags are refused', () => {
    const u = 'http://127.0.0.1:9000/warehouse/beta/t/f';
    for (const h of ['x-amz-copy-source', 'X-Amz-Copy-Source', 'x-amz-website-redirect-location', 'x-amz-acl', 'x-amz-grant-read', 'x-amz-tagging', 'x-amz-metadata-directive', 'x-amz-object-lock-mode']) {
      assert.equal(code(req('PUT', u, { [h]: ['warehouse/alpha/secret'] })), 403, h);
    }
    assert.equal(code(req('PUT', `${u}?partNumber=1&uploadId=u`, { 'x-amz-copy-source': ['/warehouse/alpha/t/f'] })), 403, 'UploadPartCopy');
    const fine = parse(req('PUT', u, { 'Content-Type': ['text/plain'], 'x-amz-meta-owner': ['beta'], 'x-amz-checksum-crc32': ['AAAAAA=='], Authorization: ['stale'], Host: ['elsewhere'] }));
    assert.deepEqual(Object.keys(fine.headers).sort(), ['content-type', 'host', 'x-amz-checksum-crc32', 'x-amz-content-sha256', 'x-amz-meta-owner']);
    assert.deepEqual(fine.headers.host, ['127.0.0.1:9000']);
    assert.deepEqual(fine.headers['x-amz-content-sha256'], ['UNSIGNED-PAYLOAD']);
    assert.equal(code(req('PUT', u, { 'bad name:x': ['v'] })), 400);
    assert.equal(code(req('PUT', u, { 'x-amz-meta-a': ['v\r\nx-amz-copy-source: /warehouse/alpha'] })), 400);
    assert.equal(code(req('PUT', u, { 'content-type': ['a'], 'Content-Type': ['b'] })), 400);
    assert.equal(code(req('PUT', u, { 'x-amz-content-sha256': ['STREAMING-AWS4-HMAC-SHA256-PAYLOAD'] })), 400);
    assert.equal(code(req('PUT', u, Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`x-h${i}`, ['v']])))), 400);
  });

  test('DeleteObjects is signed only with its body: its keys are read and its hash signed', () => {
    const uri = 'http://127.0.0.1:9000/warehouse?delete';
    const body = '<?xml version="1.0" encoding="UTF-8"?><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>beta/t/a&amp;b</Key></Object><Object><Key>beta/t/c</Key><VersionId>v1</VersionId></Object><Quiet>true</Quiet></Delete>';
    const r = parse(req('POST', uri, {}, body));
    assert.deepEqual(r.op, { name: 'DeleteObjects', keys: ['beta/t/a&b', 'beta/t/c'] });
    assert.deepEqual(r.headers['x-amz-content-sha256'], [createHash('sha256').update(body).digest('hex')]);
    assert.deepEqual(r.headers['content-md5'], [createHash('md5').update(body).digest('base64')]);
    assert.equal(code(req('POST', `${uri}&prefix=beta/t/`)), 403, 'the prefix parameter is no DeleteObjects parameter');
    assert.equal(code(req('POST', uri)), 400, 'no body');
    assert.equal(code(req('POST', uri, { 'x-amz-content-sha256': ['UNSIGNED-PAYLOAD'] }, body)), 400);
    assert.equal(code(req('POST', uri, { 'content-md5': ['AAAAAAAAAAAAAAAAAAAAAA=='] }, body)), 400);
  });

  test('the body is the plain XML S3 documents, nothing an XML parser could read otherwise', () => {
    const wrap = (inner: string) => `<Delete>${inner}</Delete>`;
    assert.deepEqual(deleteObjectsKeys(wrap('<Object><Key>beta/&#120;&#x79;</Key></Object>')), ['beta/xy']);
    assert.deepEqual(deleteObjectsKeys(`\n<Delete>\n  <Object>\n    <Key>k</Key>\n  </Object>\n</Delete>\n`), ['k']);
    for (const bad of [
      wrap('<Object><Key><![CDATA[alpha/t/f]]></Key></Object>'), wrap('<Object><Key>beta/<!-- -->x</Key></Object>'),
      `<!DOCTYPE d [<!ENTITY e "alpha/t/f">]>${wrap('<Object><Key>&e;</Key></Object>')}`, wrap('<Object><Key>a&b</Key></Object>'),
      wrap('<Object><Key>&#0;</Key></Object>'), wrap('<s3:Object><Key>k</Key></s3:Object>'), wrap('<Object><Key a="1">k</Key></Object>'),
      wrap('<Object><Key>k</Key><Key>alpha/t/f</Key></Object>'), `${wrap('')}<Delete/>`, '<?xml version="1.0" encoding="UTF-16"?><Delete></Delete>',
      '<Delete xmlns:s3="x"><Object><Key>k</Key></Object></Delete>', wrap('<?pi x?><Object><Key>k</Key></Object>'),
    ]) assert.throws(() => deleteObjectsKeys(bad), (err: DomainError) => err.status === 400, bad);
    assert.throws(() => deleteObjectsKeys(wrap('<Object><Key>k</Key></Object>'.repeat(1001))), /more than 1000 keys/);
  });
});

test('refusals are StorageRefused: 403 with a message naming the key and the rule', () => {
  try { authorize(root, { tenant: B, within: 'beta/t' }, { name: 'GetObject', key: 'alpha/t/f' }); assert.fail(); } catch (err) {
    assert.ok(err instanceof StorageRefused);
    assert.equal(err.status, 403);
    assert.equal(err.message, 'Forbidden: the key "alpha/t/f" lies outside the storage of workspace beta');
  }
});
