// promtool check metrics' naming rules (the ones a name alone can break), for tests that read
// /metrics: no promtool binary on the test machines, so its rules are restated here.
export function namingProblems(exposition: string): string[] {
  const problems: string[] = [];
  for (const line of exposition.split('\n')) {
    const m = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (!m) continue;
    const [, name, type] = m;
    if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name)) problems.push(`${name}: not a valid metric name`);
    if (/[A-Z]/.test(name)) problems.push(`${name}: metric names should be written in snake_case not camelCase`);
    if (type === 'counter' && !name.endsWith('_total')) problems.push(`${name}: counter metrics should have "_total" suffix`);
    if (type !== 'counter' && name.endsWith('_total')) problems.push(`${name}: non-counter metrics should not have "_total" suffix`);
    if (/_(count|sum|bucket)$/.test(name) && type !== 'histogram' && type !== 'summary') problems.push(`${name}: reserved suffix`);
  }
  return problems;
}
