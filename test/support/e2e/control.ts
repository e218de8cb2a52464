// Fault injection for queue-mode tests. The stack's processes belong to the jest parent process
// (globalSetup), so the tests ask it over a loopback HTTP endpoint to kill and restart them; the
// answers carry the PIDs so each test proves its fault really happened.
const http = require('node:http');

/** Serves the fault actions of a running stack on 127.0.0.1; returns { url, close() }. */
async function serveControl(stack) {
	const actions = {
		'GET /processes': async () => stack.processes(),
		'POST /kill-worker': async ({ index }) => {
			const worker = stack.workers[Number(index)];
			const pid = worker.pid;
			worker.kill('SIGKILL'); // kill -9 of the worker's process group
			const exited = await worker.exitPromise;
			return { pid, exited };
		},
		'POST /start-worker': async ({ index }) => stack.startWorker(Number(index)),
		'POST /restart-main': async () => stack.restartMain({ signal: 'SIGKILL' }),
		'POST /ensure-webhook-process': async () => stack.ensureWebhookProcess(),
		'POST /restart-webhook-process': async () => stack.restartWebhookProcess({ signal: 'SIGKILL' }),
		'POST /restart-workers': async ({ folders }) => stack.restartWorkers({ folders }),
		'POST /restart-postgres': async ({ downMs }) => stack.restartPostgres({ downMs: Number(downMs ?? 0) }),
	};
	const server = http.createServer(async (req, res) => {
		const url = new URL(req.url, 'http://127.0.0.1');
		const action = actions[`${req.method} ${url.pathname}`];
		if (!action) {
			res.writeHead(404).end();
			return;
		}
		try {
			const result = await action(Object.fromEntries(url.searchParams));
			res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result));
		} catch (error) {
			res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: error.message }));
		}
	});
	await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
	return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((resolve) => server.close(resolve)) };
}

/** The test side: control(url)('POST /kill-worker', { index: 0 }). */
function controlClient(baseUrl) {
	return async (route, params = {}) => {
		const [method, pathname] = route.split(' ');
		const res = await fetch(`${baseUrl}${pathname}?${new URLSearchParams(params)}`, { method });
		const body = await res.json();
		if (!res.ok) throw new Error(`${route} failed: ${body.error}`);
		return body;
	};
}

/** Starts again every worker that is not running (a test killed it): `control` is the harness's h.control. */
async function startStoppedWorkers(control) {
	const { workers } = await control('GET /processes');
	for (const worker of workers) if (!worker.alive) await control('POST /start-worker', { index: worker.index });
}

module.exports = { serveControl, controlClient, startStoppedWorkers };
