// An in-memory stand-in for the kernel's copy of flock's tables (inet and its ARP guard), for unit tests: it runs the
// scripts tableScript() and diffTables() write, and element commands (nothing else) with the kernel's rules that
// matter to them — a transaction applies whole or not at all; a set declared again (with the
// same declaration) gets the elements added; a chain cannot be deleted while a
// map element jumps to it; an element cannot be deleted unless present, nor added twice; a rule
// cannot name a set that does not exist; a map element or a rule cannot jump to a missing chain,
// and a chain a rule jumps to cannot be deleted. Its real
// twin is nft itself (diff.kernel.test.ts compares the two ways on a real table).
import type { NftRun } from '../src/apply.js';
import { chainTargets } from '../src/diff.js';
import {
  ARP_TABLE_FAMILY,
  TABLE_FAMILY,
  TABLE_NAME,
  tableScript,
  type NftSet,
  type NftTable,
} from '../src/render.js';

const INET = `${TABLE_FAMILY} ${TABLE_NAME}`;
const ARP = `${ARP_TABLE_FAMILY} ${TABLE_NAME}`;
const TABLE = `((?:${TABLE_FAMILY}|${ARP_TABLE_FAMILY}) ${TABLE_NAME})`;
const ELEMENT_COMMAND = new RegExp(`^(add|delete) element ${TABLE} (\\S+) \\{ (.*) \\}$`);
const DELETE_CHAIN = new RegExp(`^delete chain ${TABLE} (\\S+)$`);
const ADD_CHAIN = new RegExp(`^add chain ${TABLE} (\\S+)$`);
const FLUSH_SET = new RegExp(`^flush (set|map) ${TABLE} (\\S+)$`);
const TABLE_LINE = new RegExp(`^(delete )?table ${TABLE}(?: (\\{\\}|\\{))?$`);
const BLOCK_ITEM = /^\t(set|map|chain) (\S+) \{$/;

const mapKey = (element: string) => element.slice(0, element.indexOf(' : '));
/** A verdict map's element (`key : jump chain`), not a data map's (hostPort DNAT targets). */
const isVerdict = (element: string) => / : (jump|goto) /.test(element);
const jumpTarget = (element: string) => element.slice(element.lastIndexOf(' ') + 1);
const splitElements = (text: string) =>
  text
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e.length > 0);

function clone(t: NftTable): NftTable {
  return {
    sets: t.sets.map((s) => ({ ...s, elements: [...s.elements] })),
    chains: t.chains.map((c) => ({ ...c })),
  };
}

export class FakeNftKernel {
  /** The tables in force by `family name` (the inet table; its ARP guard apart, as in nft). */
  private current = new Map<string, NftTable>();
  /** Every script that was applied (refused ones are not). */
  readonly scripts: string[] = [];

  /** The NftRun of this fake: applies a script as one transaction or throws. */
  readonly run: NftRun = async (script) => {
    await Promise.resolve();
    this.execute(script);
  };

  /** The inet table in force, with its ARP guard; undefined when there is none. */
  get table(): NftTable | undefined {
    const inet = this.current.get(INET);
    const arp = this.current.get(ARP);
    return inet && { ...clone(inet), ...(arp ? { arp: clone(arp) } : {}) };
  }

  /** The tables in force as a full script ('' when there is none): what `nft list` would show. */
  listing(): string {
    const t = this.table;
    return t ? tableScript(t) : '';
  }

  /** Order-free view for comparisons: chains by name, elements sorted. */
  normalised(): unknown {
    const view = (t: NftTable) => ({
      sets: t.sets
        .map((s) => ({ ...s, elements: [...s.elements].sort() }))
        .sort((a, b) => (a.name < b.name ? -1 : 1)),
      chains: [...t.chains].sort((a, b) => (a.name < b.name ? -1 : 1)),
    });
    const inet = this.current.get(INET);
    const arp = this.current.get(ARP);
    return inet && { ...view(inet), ...(arp ? { arp: view(arp) } : {}) };
  }

  /** Remove the inet table, as `nft delete table` by someone else would. */
  deleteTable(): void {
    this.current.delete(INET);
  }

  execute(script: string): void {
    const tables = new Map([...this.current].map(([k, t]) => [k, clone(t)]));
    const lines = script.split('\n');
    const need = (id: string, what: string): NftTable => {
      const t = tables.get(id);
      if (!t) throw new Error(`nft: ${what}: No such file or directory (no table)`);
      return t;
    };
    const ensure = (id: string): NftTable => {
      let t = tables.get(id);
      if (!t) tables.set(id, (t = { sets: [], chains: [] }));
      return t;
    };
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i] as string;
      if (line === '' || line.startsWith('#')) continue;
      const tl = TABLE_LINE.exec(line);
      if (tl) {
        const id = tl[2] as string;
        if (tl[1] && tl[3] === undefined) {
          need(id, line);
          tables.delete(id);
        } else if (!tl[1] && tl[3] === '{}') ensure(id);
        else if (!tl[1] && tl[3] === '{') i = this.block(ensure(id), lines, i + 1);
        else throw new Error(`fake nft does not understand line ${i + 1}: ${JSON.stringify(line)}`);
        continue;
      }
      const el = ELEMENT_COMMAND.exec(line);
      if (el) {
        const table = need(el[2] as string, line);
        const set = table.sets.find((s) => s.name === el[3]);
        if (!set) throw new Error(`nft: ${line}: no such set`);
        const items = splitElements(el[4] as string);
        if (el[1] === 'add') this.add(table, set, items);
        else this.remove(set, items);
        continue;
      }
      const flush = FLUSH_SET.exec(line);
      if (flush) {
        const set = need(flush[2] as string, line).sets.find(
          (x) => x.name === flush[3] && x.kind === flush[1],
        );
        if (!set) throw new Error(`nft: ${line}: No such file or directory`);
        set.elements = [];
        continue;
      }
      const add = ADD_CHAIN.exec(line);
      if (add) {
        const table = need(add[1] as string, line);
        if (table.chains.some((c) => c.name === add[2]))
          throw new Error(`nft: ${line}: File exists`);
        table.chains.push({
          name: add[2] as string,
          hook: false,
          lines: [`\tchain ${add[2]} {`, '\t}'],
        });
        continue;
      }
      const del = DELETE_CHAIN.exec(line);
      if (del) {
        const table = need(del[1] as string, line);
        const name = del[2] as string;
        const index = table.chains.findIndex((c) => c.name === name);
        if (index < 0) throw new Error(`nft: ${line}: no such chain`);
        if (
          table.sets.some((s) => s.kind === 'map' && s.elements.some((e) => jumpTarget(e) === name))
        )
          throw new Error(`nft: ${line}: Device or resource busy`);
        if (table.chains.some((c) => c.name !== name && chainTargets(c.lines).includes(name)))
          throw new Error(`nft: ${line}: Device or resource busy (a rule jumps to it)`);
        table.chains.splice(index, 1);
        continue;
      }
      throw new Error(`fake nft does not understand line ${i + 1}: ${JSON.stringify(line)}`);
    }
    this.current = tables;
    this.scripts.push(script);
  }

  /** A `table ... {` block from `start`; returns the index of its closing line. */
  private block(t: NftTable, lines: string[], start: number): number {
    let i = start;
    for (; i < lines.length && lines[i] !== '}'; i++) {
      const line = lines[i] as string;
      if (line.startsWith('\tcomment ')) continue;
      const m = BLOCK_ITEM.exec(line);
      if (!m) throw new Error(`fake nft does not understand ${JSON.stringify(line)}`);
      const body: string[] = [];
      for (i++; i < lines.length && lines[i] !== '\t}'; i++) body.push(lines[i] as string);
      const [, kind, name] = m as unknown as [string, 'set' | 'map' | 'chain', string];
      if (kind === 'chain') {
        if (t.chains.some((c) => c.name === name)) throw new Error(`chain ${name} exists`);
        for (const ref of body.join('\n').matchAll(/@(\w+)/g)) {
          if (!t.sets.some((s) => s.name === ref[1]))
            throw new Error(`chain ${name}: no set ${ref[1]}`);
        }
        t.chains.push({
          name,
          hook: body.some((l) => l.includes(' hook ')),
          lines: [line, ...body, '\t}'],
        });
        continue;
      }
      const at = body.findIndex((l) => l.startsWith('\t\telements = {'));
      const head = at < 0 ? body : body.slice(0, at);
      const text = at < 0 ? '' : body.slice(at).join(' ');
      // Declaring a set that exists adds the elements, if the declaration is the same.
      let set = t.sets.find((s) => s.name === name);
      if (set && (set.kind !== kind || set.head.join('\n') !== head.join('\n')))
        throw new Error(`set ${name} exists with another declaration`);
      if (!set) t.sets.push((set = { kind, name, head, elements: [] }));
      // nft creates a block's chains before its set elements: jumps are checked at the end.
      this.add(
        t,
        set,
        splitElements(text.slice(text.indexOf('{') + 1, text.lastIndexOf('}'))),
        false,
      );
    }
    if (i >= lines.length) throw new Error('unterminated table block');
    for (const c of t.chains) {
      for (const target of chainTargets(c.lines)) {
        if (!t.chains.some((x) => x.name === target))
          throw new Error(`nft: chain ${c.name}: no chain ${target} to jump to`);
      }
    }
    for (const s of t.sets) {
      for (const e of s.kind === 'map' ? s.elements.filter(isVerdict) : []) {
        if (!t.chains.some((c) => c.name === jumpTarget(e)))
          throw new Error(`nft: element ${e} of ${s.name}: no chain ${jumpTarget(e)}`);
      }
    }
    return i;
  }

  private add(t: NftTable, set: NftSet, items: string[], checkJumps = true): void {
    const have = new Set(set.kind === 'map' ? set.elements.map(mapKey) : set.elements);
    for (const e of items) {
      const key = set.kind === 'map' ? mapKey(e) : e;
      if (have.has(key)) throw new Error(`nft: element ${e} of ${set.name}: File exists`);
      if (
        checkJumps &&
        set.kind === 'map' &&
        isVerdict(e) &&
        !t.chains.some((c) => c.name === jumpTarget(e))
      )
        throw new Error(`nft: element ${e} of ${set.name}: no chain ${jumpTarget(e)}`);
      have.add(key);
      set.elements.push(e);
    }
  }

  private remove(set: NftSet, items: string[]): void {
    for (const e of items) {
      const index = set.elements.findIndex((x) => (set.kind === 'map' ? mapKey(x) : x) === e);
      if (index < 0) throw new Error(`nft: delete element ${e} of ${set.name}: No such file`);
      set.elements.splice(index, 1);
    }
  }
}
