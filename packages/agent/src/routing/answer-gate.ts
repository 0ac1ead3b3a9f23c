// Questions asked in the background for the announcement pass, which must not wait: "does
// kube-proxy here deliver to this Service yet?". open() answers at once with what is known
// (false until the first yes) and asks again; a changed answer, or a "not yet" (asked again after
// retryMs), triggers the pass.
export interface AnswerGateOptions {
  /** While an answer is "not yet": ask again after this long (default 200 ms). */
  retryMs?: number;
}

export class AnswerGate<K extends string | number> {
  private readonly known = new Map<K, boolean>();
  private readonly asking = new Set<K>();
  private readonly retryMs: number;

  constructor(
    private readonly check: (key: K) => Promise<boolean>,
    /** An answer changed, or the gate wants to ask again: re-plan after delayMs. */
    private readonly changed: (delayMs: number) => void,
    options: AnswerGateOptions = {},
  ) {
    this.retryMs = options.retryMs ?? 200;
  }

  /** The last answer for `key` (false until it said yes); asks again in the background. */
  open(key: K): boolean {
    void this.askOne(key);
    return this.known.get(key) ?? false;
  }

  /** Ask about these keys now; resolves once every answer is in. */
  async ask(keys: Iterable<K>): Promise<void> {
    await Promise.all([...new Set(keys)].map((key) => this.askOne(key)));
  }

  /** Forget the keys no longer in use. */
  keep(keys: ReadonlySet<K>): void {
    for (const key of this.known.keys()) if (!keys.has(key)) this.known.delete(key);
  }

  private async askOne(key: K): Promise<void> {
    if (this.asking.has(key)) return;
    this.asking.add(key);
    let answer = false;
    try {
      answer = await this.check(key);
    } catch {
      answer = false; // a failed question is a "not yet": asked again after retryMs
    } finally {
      this.asking.delete(key);
    }
    const before = this.known.get(key) ?? false;
    this.known.set(key, answer);
    if (answer !== before) this.changed(0);
    else if (!answer) this.changed(this.retryMs);
  }
}
