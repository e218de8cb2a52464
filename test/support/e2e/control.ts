// Fault injection for queue-mode tests. The stack's processes belong to the jest parent process
// (globalSetup), so the tests ask it over a loopback HTTP endpoint to kill and restart them; the
// answers carry the PIDs so each test proves its fault really happened.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { startStack } from '../stack/n8nStack';
import { checkFolderMode } from '../stack/n8nProcesses';
import type { Json } from './workflows';

/** A stack startStack started (n8n, its workers, Redis, Postgres). */
export type RunningStack = Awaited<ReturnType<typeof startStack>>;

/** The test side of the control endpoint: control('POST /kill-worker', { index: 0 }) → the action's answer. */
export type ControlClient = (route: string, params?: Record<string, string | number>) => Promise<Json>;

type Action = (params: Record<string, string>) => Promise<unknown>;

/** Serves the fault actions of a running stack on 127.0.0.1; returns { url, close() }. */
export async function serveControl(stack: RunningStack): Promise<{ url: string; close: () => Promise<void> }> {
	const actions: Record<string, Action> = {
		'GET /processes': async () => stack.processes(),
		'POST /kill-worker': async ({ index }) => {
			const worker = stack.workers[Number(index)];
			const pid = worker.pid;
			worker.kill('SIGKILL'); // kill -9 of the worker's process group
			const exited = await worker.exitPromise;
			return { pid, exited };
		},
		'POST /start-worker': async ({ index }) => stack.startWorker(Number(index)),
		'POST /restart-worker': async ({ index }) => stack.restartWorker(Number(index)),
		'POST /restart-main': async ({ downMs }) => stack.restartMain({ signal: 'SIGKILL', downMs: Number(downMs ?? 0) }),
		'POST /ensure-webhook-process': async () => stack.ensureWebhookProcess(),
		'POST /restart-webhook-process': async () => stack.restartWebhookProcess({ signal: 'SIGKILL' }),
		'POST /restart-workers': async ({ folders }) => stack.restartWorkers({ folders: checkFolderMode(folders) }),
		'POST /restart-postgres': async ({ downMs }) => stack.restartPostgres({ downMs: Number(downMs ?? 0) }),
	};
	const server = http.createServer(async (req, res) => {
		const url = new URL(req.url ?? '', 'http://127.0.0.1');
		const action = actions[`${req.method} ${url.pathname}`];
		if (!action) {
			res.writeHead(404).end();
			return;
		}
		try {
			const result = await action(Object.fromEntries(url.searchParams));
			res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result));
		} catch (error) {
			res
				.writeHead(500, { 'content-type': 'application/json' })
				.end(JSON.stringify({ error: error instanceof Error ? error.message : String(error) }));
		}
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	return {
		url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
		// A request whose action never ended (its test timed out) would keep close() waiting: cut it.
		close: () =>
			new Promise<void>((resolve) => {
				server.close(() => resolve());
				server.closeAllConnections();
			}),
	};
}

/** The test side: control(url)('POST /kill-worker', { index: 0 }). */
export function controlClient(baseUrl: string): ControlClient {
	return async (route, params = {}) => {
		const [method, pathname] = route.split(' ');
		const query = new URLSearchParams(Object.entries(params).map(([name, value]): [string, string] => [name, String(value)]));
		const res = await fetch(`${baseUrl}${pathname}?${query}`, { method });
		const body = (await res.json()) as Json;
		if (!res.ok) throw new Error(`${route} failed: ${body.error}`);
		return body;
	};
}

/** Starts again every worker that is not running (a test killed it): `control` is the harness's h.control. */
export async function startStoppedWorkers(control: ControlClient): Promise<void> {
	const { workers } = (await control('GET /processes')) as { workers: Array<{ alive: boolean; index: number }> };
	for (const worker of workers) if (!worker.alive) await control('POST /start-worker', { index: worker.index });
}
