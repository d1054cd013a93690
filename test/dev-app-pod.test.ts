// The development app pod (scripts/dev/app-pod.py, python3's standard library) and the sample app
// serve-dev.sh publishes (scripts/dev/hello.py), as the development setup runs them: the
// subprocess launcher behind the real apps origin, the app's query going through the gateway at
// apps.pod.callback_url to the embedded engine with the viewer's rights. Real PostgreSQL, Redis, S3.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { freePort } from './helpers/net.js';
import { ROOT } from './helpers/cli.js';
import { newApp, openSession, startPodBed, subprocessPods, type PodBed, type SubprocessPods } from './helpers/app-pods.js';
import { APP_COOKIE } from '../src/api/apps-origin.js';

const POD = path.join(ROOT, 'scripts/dev/app-pod.py');
const HELLO = readFileSync(path.join(ROOT, 'scripts/dev/hello.py'), 'utf8');

describe('the development app pod running the sample app', () => {
  let pods: SubprocessPods;
  let b: PodBed;
  before(async () => {
    const port = await freePort();
    pods = await subprocessPods({ SVC_APPS__POD__CALLBACK_URL: `http://127.0.0.1:${port}`, SVC_APPS__POD__COMMAND: JSON.stringify(['python3', POD]) });
    b = await startPodBed({ ...pods.env, SVC_ENGINES__PROVISIONER: 'none' });
    await b.t.app.listen({ host: '127.0.0.1', port });
  });
  after(async () => { await b?.close(); await rm(pods.root, { recursive: true, force: true }); });

  const get = (token: string) => b.origin.inject({ method: 'GET', url: '/', headers: { cookie: `${APP_COOKIE}=${token}` } });

  test('a viewer\'s page is render()\'s HTML with the rows of its query through the gateway', async () => {
    const id = await newApp(b.admin, 'hello', HELLO);
    const res = await get(await openSession(b.admin, b.origin, id));
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    assert.match(res.body, /<th>greeting<\/th><th>answer<\/th><th>today<\/th>/);
    assert.match(res.body, /<td>Hello from DuckDB<\/td><td>42<\/td><td>\d{4}-\d\d-\d\d<\/td>/);
    assert.doesNotMatch(res.body, /edit session/);
  });

  test('an edit session shows the draft with its banner; a failing app is a 500 naming the error; a file without render() is its source', async () => {
    const id = await newApp(b.admin, 'drafty', 'def render(query):\n    return "<p>draft one</p>"\n', false);
    const edit = await get(await openSession(b.admin, b.origin, id, 'edit'));
    assert.equal(edit.statusCode, 200, edit.body);
    assert.match(edit.body, /edit session: save the draft in the console, then reload/);
    assert.match(edit.body, /<p>draft one<\/p>/);
    const broken = await newApp(b.admin, 'broken', 'def render(query):\n    return query("SELECT * FROM no_such_table")\n');
    const failed = await get(await openSession(b.admin, b.origin, broken));
    assert.equal(failed.statusCode, 500);
    assert.match(failed.body, /QueryError: 400 bad_request: .*no_such_table/);
    const plain = await newApp(b.admin, 'plain', 'x = 1 < 2\n');
    const shown = await get(await openSession(b.admin, b.origin, plain));
    assert.equal(shown.statusCode, 200);
    assert.match(shown.body, /<pre>x = 1 &lt; 2\n<\/pre>/);
  });
});
