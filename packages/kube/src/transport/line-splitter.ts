// A watch stream's events, one JSON document per line, cut from the raw bytes: each line is
// decoded once, whatever the number of chunks it came in.
const NEWLINE = 0x0a;

export class LineSplitter {
  private parts: Buffer[] = [];

  /** The complete, non-blank lines this chunk ends (trimmed); the rest waits for more. */
  push(chunk: Buffer): string[] {
    const out: string[] = [];
    let start = 0;
    for (let nl = chunk.indexOf(NEWLINE); nl >= 0; nl = chunk.indexOf(NEWLINE, start)) {
      this.parts.push(chunk.subarray(start, nl));
      const line = Buffer.concat(this.parts).toString('utf8').trim();
      this.parts = [];
      start = nl + 1;
      if (line) out.push(line);
    }
    if (start < chunk.length) this.parts.push(chunk.subarray(start));
    return out;
  }

  /** What came after the last newline (decoded). */
  rest(): string {
    return Buffer.concat(this.parts).toString('utf8');
  }
}
