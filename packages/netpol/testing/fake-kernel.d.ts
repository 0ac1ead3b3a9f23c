import type { NftRun } from '../src/apply.js';
import { type NftTable } from '../src/render.js';
export declare class FakeNftKernel {
    private current;
    /** Every script that was applied (refused ones are not). */
    readonly scripts: string[];
    /** The NftRun of this fake: applies a script as one transaction or throws. */
    readonly run: NftRun;
    /** The table in force; undefined when there is none. */
    get table(): NftTable | undefined;
    /** The table in force as a full script ('' when there is none): what `nft list` would show. */
    listing(): string;
    /** Order-free view for comparisons: chains by name, elements sorted. */
    normalised(): unknown;
    /** Remove the table, as `nft delete table` by someone else would. */
    deleteTable(): void;
    execute(script: string): void;
    /** A `table ... {` block from `start`; returns the index of its closing line. */
    private block;
    private add;
    private remove;
}
//# sourceMappingURL=fake-kernel.d.ts.map