// node:http and node:https through require(). An ES import of node:http builds its ES module
// facade, which reads every export, and reading `WebSocket` among them loads undici: about 25 ms
// of every `svc serve` start (issue 27 point 8). Types come from `import type` as usual.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
export const http = require('node:http') as typeof import('node:http');
export const https = require('node:https') as typeof import('node:https');
