// RFC 6749 5.2 errors of the token endpoint (plus RFC 8707's invalid_target and the API's 429 code).
export type OAuthErrorCode =
  | 'invalid_request' | 'invalid_client' | 'invalid_grant' | 'unauthorized_client' | 'unsupported_grant_type'
  | 'invalid_scope' | 'invalid_target' | 'too_many_requests' | 'temporarily_unavailable' | 'server_error';

const STATUS: Record<OAuthErrorCode, number> = {
  invalid_request: 400, invalid_client: 401, invalid_grant: 400, unauthorized_client: 400, unsupported_grant_type: 400,
  invalid_scope: 400, invalid_target: 400, too_many_requests: 429, temporarily_unavailable: 503, server_error: 500,
};

export class OAuthError extends Error {
  readonly status: number;
  constructor(readonly error: OAuthErrorCode, readonly description: string, readonly retryAfterSecs?: number) {
    super(description);
    this.status = STATUS[error];
  }
}
