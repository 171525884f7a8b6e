// Types of the plain-JavaScript test runner's exports (test/run.mjs), for its unit test.
export function vitestLine(report: unknown, seconds: number): string;
export function playwrightLine(report: unknown, seconds: number): string;
