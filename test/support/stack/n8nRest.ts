// A tiny cookie-keeping REST client for n8n's internal API (/rest): owner setup and login, any
// path of the server with the login cookie. Node 20 compatible.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { requestOnOwnConnection } from './ownConnection';

/**
 * n8n answers JSON on its REST API and Respond nodes may not: callers keep the raw text too.
 * `T` is the shape the caller expects of the body.
 */
export function parseJsonOrUndefined<T = unknown>(text: string): T | undefined {
	try {
		return JSON.parse(text) as T;
	} catch {
		return undefined;
	}
}

/**
 * One answer of the server: status, the body parsed as JSON and as text. `json` is undefined when
 * the body is not JSON; `T` is the shape the caller expects of the route's answer.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- n8n's answer, read member by member unless the caller names its shape
export interface RestResponse<T = any> {
	status: number;
	json: T;
	text: string;
}

export interface OwnerAccount {
	email: string;
	password: string;
	firstName?: string;
	lastName?: string;
}

export interface RestClient {
	/** A route of n8n's REST API (`/rest` + route). */
	// eslint-disable-next-line @typescript-eslint/no-explicit-any -- as RestResponse
	call: <T = any>(method: string, route: string, body?: unknown) => Promise<RestResponse<T>>;
	/** Any path of the server, with the login cookie (e.g. the editor's /types/nodes.json). */
	request: <T = unknown>(method: string, pathname: string, body?: unknown) => Promise<RestResponse<T>>;
	/** The owner's user, as n8n answers a login. */
	ownerLogin: (account: OwnerAccount) => Promise<unknown>;
	testCredential: <T = unknown>(credential: unknown) => Promise<RestResponse<T>>;
}

export function restClient(baseUrl: string): RestClient {
	let cookie = '';
	const call = async <T = unknown>(method: string, route: string, body?: unknown) => request<T>(method, `/rest${route}`, body);
	const request = async <T = unknown>(method: string, pathname: string, body?: unknown): Promise<RestResponse<T>> => {
		const text = body === undefined ? undefined : JSON.stringify(body);
		const res = await requestOnOwnConnection(`${baseUrl}${pathname}`, {
			method,
			headers: { 'content-type': 'application/json', 'browser-id': 'n8n-nodes-idempotency', ...(cookie ? { cookie } : {}) },
			body: text,
		});
		const auth = (res.headers['set-cookie'] ?? []).map((c) => c.split(';')[0]).find((c) => c.startsWith('n8n-auth='));
		if (auth) cookie = auth;
		return { status: res.status, json: parseJsonOrUndefined<T>(res.text) as T, text: res.text };
	};
	return {
		call,
		/** Any path of the server, with the login cookie (e.g. the editor's /types/nodes.json). */
		request,
		/**
		 * Creates the owner on a fresh instance, else logs in with the same account. n8n allows 5
		 * logins per account per minute, and every e2e file needs a session: the session cookie is
		 * kept in a file per instance and reused while n8n still accepts it.
		 */
		async ownerLogin({ email, password, firstName = 'Demo', lastName = 'Owner' }) {
			const sessionFile = path.join(
				os.tmpdir(),
				`n8n-idempotency-session-${crypto.createHash('sha256').update(`${baseUrl} ${email}`).digest('hex').slice(0, 16)}`,
			);
			const saved = fs.existsSync(sessionFile) ? fs.readFileSync(sessionFile, 'utf8') : '';
			if (saved) {
				cookie = saved;
				const current = await call<{ data?: { email?: string } } | undefined>('GET', '/login');
				if (current.status === 200 && current.json?.data?.email === email) return current.json;
				cookie = '';
			}
			// n8n answers 503 "Database is not ready!" to everything from a failed health ping of its
			// database (a fixed 5 s timeout, missed on a loaded machine) until the next ping passes.
			let setup: RestResponse;
			let login: RestResponse;
			for (const until = Date.now() + 30000; ; await new Promise((resolve) => setTimeout(resolve, 1000))) {
				setup = await call('POST', '/owner/setup', { email, password, firstName, lastName });
				// A login after the setup, even a successful one: the first request after a fresh owner's setup
				// was refused (401) with the cookie the setup answer carried.
				login = await call('POST', '/login', { emailOrLdapLoginId: email, password });
				if (login.status !== 503 || Date.now() > until) break;
			}
			if (login.status !== 200)
				throw new Error(`n8n owner setup (${setup.status}) and login (${login.status}) failed: ${login.text.slice(0, 300)}`);
			if (cookie) fs.writeFileSync(sessionFile, cookie, { mode: 0o600 });
			return login.json;
		},
		async testCredential<T = unknown>(credential: unknown) {
			return call<T>('POST', '/credentials/test', { credentials: credential });
		},
	};
}
