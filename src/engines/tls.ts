// SVC_ENGINE_TLS_INSECURE (SPEC 8, outside the configuration file): `1`, `true` or `yes` skip TLS
// verification on connections to engines. Development only (SPEC 5.3): `svc serve` logs a warning
// at start when it is set.
export function engineTlsInsecure(env: Readonly<Record<string, string | undefined>>): boolean {
  const v = env.SVC_ENGINE_TLS_INSECURE;
  return v === '1' || v === 'true' || v === 'yes';
}

export const TLS_INSECURE_WARNING = 'SVC_ENGINE_TLS_INSECURE is set: TLS certificates of engines are not verified (development only, SPEC 5.3)';
