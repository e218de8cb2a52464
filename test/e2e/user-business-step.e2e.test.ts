// The webhook template after the edit its notes invite: the example business step replaced by the
// user's own nodes, every other node untouched, the user's nodes set to On Error: Continue (using
// error output) as the note says. A sender that retries every non-2xx like a provider delivers each
// event several times at once; each replacement gives exactly one effect per event — for the failing
// step none until it is fixed, then one — and every event ends completed.
// e2e-tags: single queue compatibility:single
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { harness } from '../support/e2e/harness';
import {
	readShippedTemplate,
	withOwnWebhook,
	publishWorkflow,
	appCredentialData,
	createCredential,
	credentialData,
	makeCredentialUnreadable,
	UNREADABLE_CREDENTIAL_DATA,
} from '../support/e2e/restWorkflows';
import { deliverAll } from '../support/e2e/provider';

const BUSINESS = 'Business Step (insert business_log)';
const RETRY = { firstDelayMs: 200, maxDelayMs: 2000, maxAttempts: 40, budgetMs: 120000 };

/** A credential as a node stores it. */
type CredentialRef = { id: string; name: string };

/** One of the user's nodes, as the editor saves it (without id and position). */
interface UserNode {
	name: string;
	type: string;
	typeVersion: number;
	parameters: Record<string, unknown>;
	credentials?: Record<string, CredentialRef>;
}

/** A node of the shipped template, as far as this file reads it. */
interface TemplateNode {
	name: string;
	position: [number, number];
}

/** One answered attempt of the provider, as far as this file reads it. */
interface Attempt {
	status: number;
	outcome: string | null;
}

/** deliverAll's options: the URL, the plan, how many at once, the retries, what sees each attempt. */
type DeliverAllOptions = Parameters<typeof deliverAll>[0];

/** The user's Postgres insert, without RETURNING: n8n's Postgres node then outputs `{ success: true }`. */
function userInsert(name: string, credentials: Record<string, CredentialRef>): UserNode {
	return {
		name,
		type: 'n8n-nodes-base.postgres',
		typeVersion: 2.6,
		parameters: {
			operation: 'executeQuery',
			query: 'INSERT INTO business_log (event_key, event_type) VALUES ($1, $2)',
			options: { queryReplacement: '={{ [$json.idempotency.key, $json.body.type] }}' },
		},
		credentials,
	};
}

function codeNode(name: string, jsCode: string): UserNode {
	return { name, type: 'n8n-nodes-base.code', typeVersion: 2, parameters: { jsCode } };
}

/**
 * The shipped template with the example business step deleted and the user's chain of nodes put in
 * its place: the first connected to Reserve's New output (above Settle, where the example was), each
 * next one to the previous one's success output, each with On Error: Continue (using error output).
 */
function templateWithUserStep(chain: UserNode[], label: string) {
	const template = readShippedTemplate('idempotent-webhook.json');
	const example = template.nodes.find((node: TemplateNode) => node.name === BUSINESS);
	const [x, y] = example.position;
	const userNodes = chain.map((node, index) => ({
		id: randomUUID(),
		position: [x + index * 220, y],
		onError: 'continueErrorOutput',
		...node,
	}));
	template.nodes = [...template.nodes.filter((node: TemplateNode) => node !== example), ...userNodes];
	const reserveOutputs = template.connections['Idempotency Reserve'].main;
	reserveOutputs[0] = reserveOutputs[0].map((link: { node: string }) =>
		link.node === BUSINESS ? { ...link, node: userNodes[0].name } : link,
	);
	for (let i = 1; i < userNodes.length; i++)
		template.connections[userNodes[i - 1].name] = { main: [[{ node: userNodes[i].name, type: 'main', index: 0 }]] };
	return withOwnWebhook(template, label);
}

describe('the webhook template with the user’s own business step: one effect per event, with a retrying sender', () => {
	const h = harness();
	const businessCredential = { postgres: { id: 'businessPg01', name: 'Business Postgres' } };
	let server: http.Server;
	let serverUrl: string;
	const hits = new Map<string, number>();
	// What the user's service does on each call besides answering (a test sets it for one test).
	let duringCall: (() => Promise<void>) | null = null;

	beforeAll(async () => {
		server = http.createServer((req, res) => {
			let body = '';
			req.on('data', (chunk) => (body += chunk));
			req.on('end', async () => {
				const key = JSON.parse(body || '{}').key;
				hits.set(key, (hits.get(key) ?? 0) + 1);
				await duringCall?.();
				res.writeHead(200, { 'content-type': 'application/json' });
				// Arbitrary JSON, nothing the old template's check looked for.
				res.end(JSON.stringify({ accepted: true, ticket: `t-${hits.size}` }));
			});
		});
		await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
		serverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/effects`;
	});

	afterAll(async () => {
		await new Promise((resolve) => server.close(resolve));
	});

	const rowsFor = async (keys: string[]) =>
		Object.fromEntries(
			(
				await h.appQuery('SELECT event_key, count(*)::int AS n FROM business_log WHERE event_key = ANY($1) GROUP BY event_key', [keys])
			).rows.map((row: { event_key: string; n: number }) => [row.event_key, row.n]),
		);
	const statusesOf = async (keys: string[]) =>
		Object.fromEntries(
			(await h.appQuery('SELECT key, status FROM processed_events WHERE key = ANY($1)', [keys])).rows.map(
				(row: { key: string; status: string }) => [row.key, row.status],
			),
		);

	/** Three events, each delivered three times at once, retried until 2xx. */
	async function deliverEvents(
		url: string,
		label: string,
		{ type = 'e2e.user', onAttempt }: { type?: string; onAttempt?: (attempt: Attempt, keys: string[]) => void } = {},
	) {
		const ids = [0, 1, 2].map((i) => `evt_user_${label}_${Date.now().toString(36)}_${i}`);
		const deliveries = ids.flatMap((id) => [0, 1, 2].map(() => ({ eventId: id, body: { id, type, object: 'event' } })));
		const keys = ids.map((id) => `evt:${id}`);
		const run = await deliverAll({
			url,
			plan: { deliveries },
			concurrency: 9,
			retry: RETRY,
			onAttempt: (attempt: Attempt) => onAttempt?.(attempt, keys),
		} as DeliverAllOptions);
		return { ids, keys, run };
	}

	function expectAllAnswered(run: Awaited<ReturnType<typeof deliverAll>>) {
		expect(run.deliveries.filter((d) => d.gaveUp)).toEqual([]);
		for (const delivery of run.deliveries) expect(delivery.final.status).toBe(200);
	}

	const insertChains = (): Record<string, UserNode[]> => ({
		'a Postgres insert without RETURNING': [userInsert('Insert Order', businessCredential)],
		'a Set node that keeps the input fields, after the insert': [
			userInsert('Insert Order', businessCredential),
			{
				name: 'Tag Result',
				type: 'n8n-nodes-base.set',
				typeVersion: 3.4,
				parameters: {
					includeOtherFields: true,
					assignments: { assignments: [{ id: randomUUID(), name: 'tagged', value: true, type: 'boolean' }] },
					options: {},
				},
			},
		],
		'a Code node returning a new item, after the insert': [
			userInsert('Insert Order', businessCredential),
			codeNode('Summarise', 'return [{ json: { processed: true } }];'),
		],
		'a step that returns zero items': [userInsert('Insert Order', businessCredential), codeNode('Nothing Back', 'return [];')],
		'a step that returns several items': [
			userInsert('Insert Order', businessCredential),
			codeNode('Fan Out', 'return [1, 2, 3].map((n) => ({ json: { n } }));'),
		],
	});

	test.each(Object.keys(insertChains()))('%s: one business row per event, every key completed, a later copy a duplicate', async (label) => {
		const { workflow, webhookPath } = templateWithUserStep(insertChains()[label], 'userstep');
		await publishWorkflow(h, workflow, webhookPath);
		const url = `${h.state.baseUrl}/webhook/${webhookPath}`;
		const { keys, ids, run } = await deliverEvents(url, label.replace(/\W+/g, '').slice(0, 12));
		expectAllAnswered(run);
		expect(await rowsFor(keys)).toEqual(Object.fromEntries(keys.map((key) => [key, 1])));
		expect(await statusesOf(keys)).toEqual(Object.fromEntries(keys.map((key) => [key, 'completed'])));
		const later = await h.deliver(url, { id: ids[0], type: 'e2e.user', object: 'event' });
		expect([later.status, later.outcome]).toEqual([200, 'duplicate']);
		expect(await rowsFor(keys)).toEqual(Object.fromEntries(keys.map((key) => [key, 1])));
	});

	/** An HTTP Request to the user's service with the event's key. */
	const callFulfilment = (): UserNode => ({
		name: 'Call Fulfilment',
		type: 'n8n-nodes-base.httpRequest',
		typeVersion: 4.2,
		parameters: {
			method: 'POST',
			url: serverUrl,
			sendBody: true,
			specifyBody: 'json',
			jsonBody: '={{ JSON.stringify({ key: $json.idempotency.key }) }}',
			options: {},
		},
	});

	test('an HTTP Request to the user’s service answering arbitrary JSON: one call per event', async () => {
		const { workflow, webhookPath } = templateWithUserStep([callFulfilment()], 'userhttp');
		await publishWorkflow(h, workflow, webhookPath);
		const { keys, run } = await deliverEvents(`${h.state.baseUrl}/webhook/${webhookPath}`, 'http');
		expectAllAnswered(run);
		expect(Object.fromEntries(keys.map((key) => [key, hits.get(key)]))).toEqual(Object.fromEntries(keys.map((key) => [key, 1])));
		expect(await statusesOf(keys)).toEqual(Object.fromEntries(keys.map((key) => [key, 'completed'])));
	});

	test('n8n refuses the idempotency credential once the step ran (its stored data does not decrypt): Settle does not use the settings this n8n read for Reserve; one call, 200 completion_pending', async () => {
		const credentialId = 'idempotencyPg01';
		const { workflow, webhookPath } = templateWithUserStep([callFulfilment()], 'usercredlost');
		await publishWorkflow(h, workflow, webhookPath);
		const url = `${h.state.baseUrl}/webhook/${webhookPath}`;
		const id = `evt_user_credlost_${Date.now().toString(36)}`;
		let first: Awaited<ReturnType<typeof h.deliver>>;
		let duringSettle: unknown;
		let restore: (() => Promise<void>) | undefined;
		// n8n reads a credential from its database at each node run: during the step its data stops decrypting.
		duringCall = async () => {
			restore = await makeCredentialUnreadable(h, credentialId);
		};
		try {
			first = await h.deliver(url, { id, type: 'e2e.user', object: 'event' });
			duringSettle = await credentialData(h, credentialId);
		} finally {
			duringCall = null;
			await restore?.();
		}
		// The fault happened: the step ran, and the credential was unreadable from then until the answer.
		expect(hits.get(`evt:${id}`)).toBe(1);
		expect(duringSettle).toBe(UNREADABLE_CREDENTIAL_DATA);
		// A credential n8n cannot decrypt is n8n's refusal, not its database being down: Settle does not
		// complete the key with the settings it read before; the effect happened, so 200.
		expect([first.status, first.outcome]).toEqual([200, 'completion_pending']);
		expect(hits.get(`evt:${id}`)).toBe(1);
	});

	test('a step that fails: 500 and no effect until the cause is fixed, then exactly one effect per event', async () => {
		const constraint = `business_log_user_refuses_${Date.now().toString(36)}`;
		await h.appQuery(`ALTER TABLE business_log ADD CONSTRAINT ${constraint} CHECK (event_type IS DISTINCT FROM 'e2e.userfail')`);
		try {
			const { workflow, webhookPath } = templateWithUserStep([userInsert('Insert Order', businessCredential)], 'userfail');
			await publishWorkflow(h, workflow, webhookPath);
			let refused = 0;
			let fixed: Promise<unknown> | null = null;
			const { keys, run } = await deliverEvents(`${h.state.baseUrl}/webhook/${webhookPath}`, 'fail', {
				type: 'e2e.userfail',
				onAttempt: (attempt, keys) => {
					if (attempt.status === 500 && attempt.outcome === 'failed') refused += 1;
					if (refused >= 9 && !fixed) {
						fixed = (async () => {
							const during = await rowsFor(keys);
							await h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT ${constraint}`);
							return during;
						})();
					}
				},
			});
			expect(await fixed).toEqual({}); // no effect while the step failed
			expectAllAnswered(run);
			expect(await rowsFor(keys)).toEqual(Object.fromEntries(keys.map((key) => [key, 1])));
			expect(await statusesOf(keys)).toEqual(Object.fromEntries(keys.map((key) => [key, 'completed'])));
		} finally {
			await h.appQuery(`ALTER TABLE business_log DROP CONSTRAINT IF EXISTS ${constraint}`);
		}
	});

	test('a step whose credential cannot be read: 500 and no effect until it can, then exactly one effect per event', async () => {
		const credential = await createCredential(h, 'postgres', appCredentialData(h));
		const { workflow, webhookPath } = templateWithUserStep([userInsert('Insert Order', { postgres: credential })], 'usercred');
		await publishWorkflow(h, workflow, webhookPath);
		const restore = await makeCredentialUnreadable(h, credential.id);
		let refused = 0;
		let restored: Promise<unknown> | null = null;
		const { keys, run } = await deliverEvents(`${h.state.baseUrl}/webhook/${webhookPath}`, 'cred', {
			onAttempt: (attempt, keys) => {
				if (attempt.status === 500 && attempt.outcome === 'failed') refused += 1;
				if (refused >= 9 && !restored) {
					restored = (async () => {
						const during = await rowsFor(keys);
						await restore();
						return during;
					})();
				}
			},
		});
		expect(await restored).toEqual({});
		expectAllAnswered(run);
		expect(await rowsFor(keys)).toEqual(Object.fromEntries(keys.map((key) => [key, 1])));
		const failedFirst = await h.appQuery('SELECT max(attempts)::int AS attempts FROM processed_events WHERE key = ANY($1)', [keys]);
		expect(failedFirst.rows[0].attempts).toBeGreaterThan(1);
	});
});
