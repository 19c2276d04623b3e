/** The signed-in session, kept for the tab only (sessionStorage); signing out clears it. */
import type { UserInfo } from '../../schema/wire/auth.ts';

const KEY = 'kr.session';

export interface Session {
  token: string;
  user: UserInfo;
  via: 'token' | 'oidc';
}

export function loadSession(): Session | null {
  try {
    const raw = sessionStorage.getItem(KEY);
    if (!raw) return null;
    const s = JSON.parse(raw) as Session;
    return typeof s.token === 'string' && s.user ? s : null;
  } catch {
    return null;
  }
}

export function saveSession(s: Session): void {
  sessionStorage.setItem(KEY, JSON.stringify(s));
}

export function clearSession(): void {
  sessionStorage.removeItem(KEY);
}
