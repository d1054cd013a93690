// Errors of the Iceberg REST catalog, in the specification's IcebergErrorResponse shape
// ({"error": {"message", "type", "code"}}) with its exception type names: clients (the Java
// RESTCatalog, PyIceberg, iceberg-js) map `type` and the status to their own exceptions.
export class IcebergError extends Error {
  override name = 'IcebergError';
  constructor(readonly status: number, readonly type: string, message: string) { super(message); }
  body() { return { error: { message: this.message, type: this.type, code: this.status } }; }
}

export const badRequest = (m: string) => new IcebergError(400, 'BadRequestException', m);
export const forbidden = (m: string) => new IcebergError(403, 'ForbiddenException', m);
export const noSuchWarehouse = (m: string) => new IcebergError(404, 'NoSuchWarehouseException', m);
export const noSuchNamespace = (ns: string[]) => new IcebergError(404, 'NoSuchNamespaceException', `Namespace does not exist: ${ns.join('.')}`);
export const noSuchTable = (ns: string[], name: string) => new IcebergError(404, 'NoSuchTableException', `Table does not exist: ${[...ns, name].join('.')}`);
export const noSuchView = (ns: string[], name: string) => new IcebergError(404, 'NoSuchViewException', `View does not exist: ${[...ns, name].join('.')}`);
export const alreadyExists = (m: string) => new IcebergError(409, 'AlreadyExistsException', m);
export const namespaceNotEmpty = (ns: string[]) => new IcebergError(409, 'NamespaceNotEmptyException', `Namespace is not empty: ${ns.join('.')}`);
export const commitFailed = (m: string) => new IcebergError(409, 'CommitFailedException', m);
export const unprocessable = (m: string) => new IcebergError(422, 'UnprocessableEntityException', m);
