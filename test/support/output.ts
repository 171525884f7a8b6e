/**
 * Tees everything this process writes to stdout and stderr into `lines` between `start()` and
 * `stop()` (still written through), for the tests that read the logs back for secrets.
 */
export function captureOutput() {
  const lines: string[] = [];
  const original = { out: process.stdout.write, err: process.stderr.write };
  const tee = (stream: NodeJS.WriteStream, write: typeof process.stdout.write) => {
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      lines.push(String(chunk));
      return (write as (...a: unknown[]) => boolean).call(stream, chunk, ...rest);
    }) as typeof stream.write;
  };
  return {
    lines,
    start() {
      tee(process.stdout, original.out);
      tee(process.stderr, original.err);
    },
    stop() {
      process.stdout.write = original.out;
      process.stderr.write = original.err;
    },
  };
}
