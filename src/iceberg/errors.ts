// Errors of the Iceberg format core: a DomainError `bad_request`, so every route answers 400 with
// the message (the catalog: BadRequestException). No kind names an internal failure, so a message
// can always reach the client.
import { DomainError } from '../errors.js';

export type FormatErrorKind =
  /** the input breaks the Iceberg specification (a schema, spec, filter, file or value) */
  | 'invalid'
  /** valid Iceberg, but something this implementation does not do (named in the message) */
  | 'unsupported'
  /** a snapshot, ref, field or file the request names does not exist */
  | 'not-found';

export class IcebergFormatError extends DomainError {
  constructor(readonly kind: FormatErrorKind, message: string) {
    super('bad_request', message);
    this.name = 'IcebergFormatError';
  }
}

export const invalid = (m: string) => new IcebergFormatError('invalid', m);
export const unsupported = (m: string) => new IcebergFormatError('unsupported', m);
export const notFound = (m: string) => new IcebergFormatError('not-found', m);

/**
 * A commit that cannot apply to the table as it now is (a file a delete names was removed by a
 * concurrent commit): 409, and the caller should re-run the statement.
 */
export class IcebergConflictError extends DomainError {
  constructor(message: string) {
    super('conflict', message);
    this.name = 'IcebergConflictError';
  }
}
