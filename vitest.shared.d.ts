export type Tier = 'unit' | 'kernel' | 'cluster';
export declare function tierConfig(root: string): import("vite").UserConfig;
//# sourceMappingURL=vitest.shared.d.ts.map