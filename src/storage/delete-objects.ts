// The body of S3 DeleteObjects, read strictly: the keys it names are what the bulk delete removes,
// so they are read the way S3 reads them or the request is refused. Only the plain shape the SDKs
// write is accepted (an optional UTF-8 XML declaration, <Delete> with an optional default
// namespace, <Object><Key>..</Key>[<VersionId>..</VersionId>]</Object> items, an optional <Quiet>);
// CDATA, comments, processing instructions, a DOCTYPE (entity definitions), prefixed names and
// attributes are refused, so no XML feature can make S3 read a key that was not checked here.
import { badRequest } from '../errors.js';
import { MAX_DELETE_KEYS } from './ownership.js';

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

const malformed = (why: string) => badRequest(`the DeleteObjects body is not the plain XML S3 documents: ${why}`);

function text(raw: string): string {
  return raw.replace(/&([^;&<]{0,10});|&/g, (m, ref: string | undefined) => {
    if (ref === undefined) throw malformed('a bare "&"');
    if (ENTITIES[ref]) return ENTITIES[ref];
    const code = /^#x([0-9a-fA-F]{1,6})$/.exec(ref) ? parseInt(ref.slice(2), 16) : /^#([0-9]{1,7})$/.test(ref) ? parseInt(ref.slice(1), 10) : NaN;
    if (!(code >= 0x20 && code <= 0x10ffff) || (code >= 0xd800 && code <= 0xdfff)) throw malformed(`the reference ${m}`);
    return String.fromCodePoint(code);
  });
}

/** The keys a DeleteObjects body names, in order; a 400 for anything but the plain shape. */
export function deleteObjectsKeys(body: string): string[] {
  let i = 0;
  const take = (re: RegExp): RegExpExecArray | null => {
    re.lastIndex = i;
    const m = re.exec(body);
    if (m) i = re.lastIndex;
    return m;
  };
  const space = /[ \t\r\n]*/y;
  take(space);
  take(/<\?xml version="1\.[01]"(?: encoding="UTF-8")?(?: standalone="(?:yes|no)")?\s*\?>/iy);
  take(space);
  if (!take(/<Delete(?:\s+xmlns="[^"<>&]*")?\s*>/y)) throw malformed('it does not open with <Delete>');
  const keys: string[] = [];
  for (;;) {
    take(space);
    if (take(/<\/Delete>/y)) break;
    if (take(/<Quiet>(?:true|false)<\/Quiet>/y)) continue;
    if (!take(/<Object>/y)) throw malformed(`unexpected content at character ${i}`);
    take(space);
    const key = take(/<Key>([^<]*)<\/Key>/y);
    if (!key) throw malformed(`an <Object> without a plain <Key> at character ${i}`);
    keys.push(text(key[1]!));
    take(space);
    take(/<VersionId>[^<&]*<\/VersionId>/y);
    take(space);
    if (!take(/<\/Object>/y)) throw malformed(`an <Object> not closed after its key at character ${i}`);
    if (keys.length > MAX_DELETE_KEYS) throw malformed(`more than ${MAX_DELETE_KEYS} keys`);
  }
  take(space);
  if (i !== body.length) throw malformed('content after </Delete>');
  return keys;
}
