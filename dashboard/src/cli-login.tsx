/** `kr login --browser`: the signed-in user confirms, a PAT labelled with the hostname goes to the CLI on loopback. */
import type { Api } from './api.ts';

export function CliLoginView({ api: _api, port: _port, state: _state, hostname }: { api: Api; port: string; state: string; hostname: string }) {
  return (
    <section>
      <h1 tabIndex={-1}>Sign in the command line on {hostname}</h1>
    </section>
  );
}
