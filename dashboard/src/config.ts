/** The runtime settings, read from config.json beside index.html, so one build serves any deployment. */
export interface DashboardConfig {
  /** The API server's base URL, without a trailing slash. */
  apiUrl: string;
  /** OpenID Connect issuer and client id; sign-in through a provider is offered only when both are set. */
  oidcIssuer?: string;
  oidcClientId?: string;
}

export async function loadConfig(): Promise<DashboardConfig> {
  const res = await fetch(new URL('config.json', document.baseURI), { cache: 'no-store' });
  if (!res.ok) throw new Error(`config.json could not be read (HTTP ${res.status})`);
  const raw = (await res.json()) as Record<string, unknown>;
  const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined);
  const apiUrl = str(raw.apiUrl);
  if (!apiUrl) throw new Error('config.json has no "apiUrl"');
  return {
    apiUrl: apiUrl.replace(/\/+$/, ''),
    oidcIssuer: str(raw.oidcIssuer)?.replace(/\/+$/, ''),
    oidcClientId: str(raw.oidcClientId),
  };
}
