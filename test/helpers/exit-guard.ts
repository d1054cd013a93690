// Loaded into every test file's process by scripts/test.sh (--import). Two guards, so one file
// can never hold the whole run until CI's time limit (a hung file once did, for 80 minutes):
//   - once a file's tests all ended (the root after-hook), its process gets 10 s to exit on its
//     own, then exits with the harness's exit code: a leftover socket or timer after a failure
//     no longer hangs the run. Unlike --test-force-exit (nodejs/node#64833) every verdict has
//     been reported by then.
//   - a file still running after FILE_LIMIT_MS is stopped with a line naming it.
// Outside the test runner's child processes (NODE_TEST_CONTEXT unset) it does nothing.
import { after } from 'node:test';

const FILE_LIMIT_MS = 20 * 60_000;
const EXIT_GRACE_MS = 10_000;

if (process.env.NODE_TEST_CONTEXT) {
  const file = process.argv[process.argv.length - 1] ?? 'a test file';
  setTimeout(() => {
    process.stderr.write(`exit-guard: ${file} still running after ${FILE_LIMIT_MS / 60_000} minutes; stopped\n`);
    process.exit(1);
  }, FILE_LIMIT_MS).unref();
  after(() => {
    setTimeout(() => {
      process.stderr.write(`exit-guard: ${file} left handles open after its last test; exiting\n`);
      process.exit();
    }, EXIT_GRACE_MS).unref();
  });
}
