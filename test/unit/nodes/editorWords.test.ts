import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { INodeProperties, INodePropertyOptions, INodeType } from 'n8n-workflow';

import { IdempotencyPostgresApi } from '../../../credentials/IdempotencyPostgresApi.credentials';
import { WebhookSignatureApi } from '../../../credentials/WebhookSignatureApi.credentials';
import { IdempotencyExecuteQuery } from '../../../nodes/IdempotencyExecuteQuery/IdempotencyExecuteQuery.node';
import { IdempotencyKey } from '../../../nodes/IdempotencyKey/IdempotencyKey.node';
import { IdempotencyReserve } from '../../../nodes/IdempotencyReserve/IdempotencyReserve.node';

// What the editor shows: subtitles in the words of the option lists, choices offered only where
// they work, documentation links that survive n8n's appended query parameters.

/** Evaluates a subtitle the way the editor does: each {{ … }} with $parameter bound. */
function subtitle(node: INodeType, parameters: Record<string, unknown>): string {
	const template = String(node.description.subtitle).replace(/^=/, '');
	return template.replace(/\{\{([\s\S]*?)\}\}/g, (_all, expression: string) =>
		String(new Function('$parameter', `return (${expression});`)(parameters)),
	);
}
const optionsOf = (property: INodeProperties) => (property.options ?? []) as INodePropertyOptions[];
const labelOf = (property: INodeProperties, value: string) => optionsOf(property).find((option) => option.value === value)?.name;

describe('subtitles', () => {
	const reserve = new IdempotencyReserve();
	const keySource = reserve.description.properties.find((property) => property.name === 'keySource')!;

	it.each(optionsOf(keySource).map((option) => String(option.value)))(
		'Reserve and Execute Query name the Key Source %s as its label does',
		(value) => {
			const label = labelOf(keySource, value)!.toLowerCase();
			for (const node of [reserve, new IdempotencyExecuteQuery()]) {
				const text = subtitle(node, { mode: 'lease', keySource: value, headerName: 'idempotency-key' });
				expect(text).not.toMatch(/undefined|\bauto\b|bodyHash/);
				expect(text.toLowerCase()).toContain(label.split(' ')[0]);
			}
		},
	);

	it('Reserve names its mode as the Mode list does', () => {
		expect(subtitle(reserve, { mode: 'lease', keySource: 'auto' })).toBe('Lease · event ID or hash');
		expect(subtitle(reserve, { mode: 'permanent', keySource: 'auto' })).toMatch(/^Permanent · /);
	});

	it("Idempotency Key shows the operation's label, never its value", () => {
		const key = new IdempotencyKey();
		const operation = key.description.properties.find((property) => property.name === 'operation')!;
		for (const option of optionsOf(operation)) {
			expect(subtitle(key, { operation: option.value, source: 'item' })).toBe(option.name);
		}
		expect(subtitle(key, { operation: 'release', source: 'execution' })).toBe('Release (failed execution)');
		expect(subtitle(key, { operation: 'fail', source: 'execution' })).toBe('Mark Failed (failed execution)');
	});
});

describe('Key From: Failed Execution', () => {
	const sources = new IdempotencyKey().description.properties.filter((property) => property.name === 'source');
	const offeredFor = (operation: string) =>
		sources
			.filter((property) => (property.displayOptions?.show?.operation as string[]).includes(operation))
			.flatMap((property) => optionsOf(property).map((option) => option.value));

	it.each(['release', 'fail'])('is offered for %s, where it works', (operation) => {
		expect(offeredFor(operation)).toEqual(['item', 'reserveNode', 'custom', 'execution']);
	});
	it('is not offered for complete, where it could only fail at run time', () => {
		expect(offeredFor('complete')).toEqual(['item', 'reserveNode', 'custom']);
	});
});

describe('documentation links', () => {
	const nodesDir = path.join(__dirname, '..', '..', '..', 'nodes');
	const codexUrls = readdirSync(nodesDir)
		.flatMap((dir) =>
			readdirSync(path.join(nodesDir, dir))
				.filter((file) => file.endsWith('.node.json'))
				.map((file) => path.join(nodesDir, dir, file)),
		)
		.flatMap((file) =>
			(
				JSON.parse(readFileSync(file, 'utf8')) as { resources: { primaryDocumentation: Array<{ url: string }> } }
			).resources.primaryDocumentation.map((doc) => doc.url),
		);
	const urls = [...codexUrls, new IdempotencyPostgresApi().documentationUrl, new WebhookSignatureApi().documentationUrl];

	it('carry no anchor: n8n appends ?utm_… after it, which breaks the anchor', () => {
		expect(codexUrls.length).toBeGreaterThanOrEqual(5);
		for (const url of urls) expect(url).not.toContain('#');
	});
});

describe('replay evidence options', () => {
	const optionNames = (node: INodeType) =>
		((node.description.properties.find((property) => property.name === 'options')?.options ?? []) as INodeProperties[]).map(
			(option) => option.name,
		);
	const evidenceOptions = ['correlationHeader', 'correlationId', 'maxPayloadKb', 'source', 'storePayload'];

	it('Reserve offers them; Execute Query, whose reservation does not store evidence, does not', () => {
		expect(optionNames(new IdempotencyReserve())).toEqual(expect.arrayContaining(evidenceOptions));
		const executeQueryOptions = optionNames(new IdempotencyExecuteQuery());
		expect(executeQueryOptions).toContain('retentionDays');
		expect(executeQueryOptions.filter((name) => evidenceOptions.includes(name))).toEqual([]);
	});

	it('List Keys offers the Replayable status', () => {
		const filters = new IdempotencyKey().description.properties.find((property) => property.name === 'listFilters')!;
		const status = (filters.options as INodeProperties[]).find((option) => option.name === 'status')!;
		expect(labelOf(status, 'replayable')).toBe('Replayable (Failed or Lease Expired)');
	});
});

describe('option descriptions in the dropdowns', () => {
	// The editor shows an option's description under its name, as plain text (markdown backticks stay
	// visible), cut after two lines: in n8n 2.40.7 at 1920 px, descriptions of 124 to 150 characters
	// were cut, 118 and 121 were not (scripts/screenshots.js opens these dropdowns).
	const MAX_SHOWN = 121;
	const nodes: INodeType[] = [new IdempotencyReserve(), new IdempotencyKey(), new IdempotencyExecuteQuery()];
	const optionDescriptions = (properties: INodeProperties[], node: string): Array<[string, string]> =>
		properties.flatMap((property) => [
			...(property.type === 'options'
				? optionsOf(property)
						.filter((option) => option.description)
						.map((option): [string, string] => [`${node} ${property.displayName}: ${option.name}`, String(option.description)])
				: []),
			...(property.type === 'collection' ? optionDescriptions(property.options as INodeProperties[], node) : []),
		]);
	const all = nodes.flatMap((node) => optionDescriptions(node.description.properties, node.description.displayName));

	it('are plain text, short enough to be read whole', () => {
		expect(all.length).toBeGreaterThan(20);
		expect(
			all.filter(([, text]) => text.includes('`') || text.length > MAX_SHOWN).map(([where, text]) => `${where} (${text.length})`),
		).toEqual([]);
	});
});

describe("the Idempotent Webhook trigger's panel", () => {
	// Without a panel of its own, n8n titles a webhook-based trigger "Pull in events from …", as if n8n fetched them.
	it('tells the user to send a signed delivery to the test URL, and that copies start no execution', async () => {
		const { IdempotentWebhook } = await import('../../../nodes/IdempotentWebhook/IdempotentWebhook.node');
		const panel = new IdempotentWebhook().description.triggerPanel;
		expect(panel).toEqual(expect.objectContaining({ header: expect.stringMatching(/test delivery/) }));
		const help = typeof panel === 'object' ? panel.executionsHelp : undefined;
		for (const text of typeof help === 'object' ? [help.inactive, help.active] : []) {
			expect(text).toContain('test URL');
			expect(text).toMatch(/copies and forgeries are answered without one/);
		}
		expect(typeof help).toBe('object');
	});
});
