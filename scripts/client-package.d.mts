/** Types of scripts/client-package.mjs (plain JavaScript, run by node without a loader). */
export declare const CLIENT_DIR: string;
export declare const CLIENT_FILES: string[];
export declare const MAX_PACKAGE_BYTES: number;
export declare const PACKAGE_NAME: string;
export declare const CLIENT_OPTIONS: { split: Record<string, unknown>; single: Record<string, unknown> };
export declare function clientVersion(root?: string): string;
export declare function clientStaleReason(dir?: string, root?: string): Promise<string | null>;
export declare function tar(entries: Array<{ name: string; data: Buffer; mode: number }>, mtime?: number): Buffer;
export declare function packageJson(version: string): Record<string, unknown>;
export declare function buildClient(dir?: string, root?: string): Promise<{ version: string; tgzBytes: number; mjsBytes: number; files: string[] }>;
export declare function buildClientIfStale(dir?: string, root?: string): Promise<string | null>;
export declare function readClientFile(name: string, dir?: string): Promise<Buffer>;
