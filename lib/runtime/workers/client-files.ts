import type { ClientFile, ClientFileName, ClientFiles } from '../../usecases/client-package.ts';

/** The Worker's static assets binding (wrangler.toml `[assets]`: dist/client/, served through the Worker). */
export interface AssetsBinding {
  fetch(request: Request | string): Promise<Response>;
}

/** The client package from the Worker's static assets: `kr.tgz` and `kr.mjs` at the assets' root. */
export function assetsClientFiles(assets: AssetsBinding | undefined): ClientFiles {
  return {
    async get(name: ClientFileName): Promise<ClientFile | null> {
      if (!assets) return null;
      const res = await assets.fetch(`https://assets.invalid/${name}`);
      if (!res.ok || !res.body) {
        await res.body?.cancel();
        return null;
      }
      const length = Number(res.headers.get('content-length'));
      if (Number.isSafeInteger(length) && length >= 0) return { body: res.body, size: length };
      const bytes = new Uint8Array(await res.arrayBuffer());
      return { body: bytes, size: bytes.length };
    },
  };
}
