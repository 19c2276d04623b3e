/** Hosted build only: the signed-in user's plan and usage, and the admin page for admins. */
import type { Api } from './api.ts';
import { Crumbs } from './ui.tsx';

export function BillingView({ api: _api }: { api: Api }) {
  return (
    <section>
      <Crumbs items={[{ label: 'Repositories', to: '#/' }, { label: 'Plan and billing' }]} />
      <h1 tabIndex={-1}>Plan and billing</h1>
    </section>
  );
}

export function AdminView({ api: _api }: { api: Api }) {
  return (
    <section>
      <Crumbs items={[{ label: 'Repositories', to: '#/' }, { label: 'Admin' }]} />
      <h1 tabIndex={-1}>Admin</h1>
    </section>
  );
}
