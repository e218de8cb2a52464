import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import type { ICredentialsHelper, IConnections, INode, INodeParameters, INodeType, IRun, IVersionedNodeType } from 'n8n-workflow';

import { baseNodesInstalled, describeWithN8n, n8nInstallDirectory } from '../support/n8nBaseNodes';
import { link } from '../support/settleWorkflows';
import {
	at,
	baseNode as node,
	events,
	EVENTS,
	jsonBodyOf,
	ifTrue,
	SPLIT_OUT_EVENTS,
	subWorkflowRedTeam,
	threeEvents,
	type Step,
} from '../support/triggerRedTeam';

/*
 * Red team 56: n8n's AI nodes behind the Idempotent Webhook trigger (and once behind Idempotency Reserve with Settle
 * beside), a shape no pass tried, in n8n 2.41.1's own engine (WorkflowExecute with its engine requests: the AI Agent 3.1
 * asks the engine to run each tool call as a run of the tool node, then runs again with the answers) with
 * @n8n/n8n-nodes-langchain 2.41.1's AI Agent (V3, loaded alone: Agent.node.js also loads V1, whose SQL agent needs
 * sqlite3's native binding, not built in this install), Text Classifier and Sentiment Analysis, their OpenAI Chat Model
 * (1.2) pointed at a local stand-in of OpenAI's chat-completions API (it answers by a script: call the connected tool,
 * then answer; classify as "charge"; refuse once where a row says), n8n's HTTP Request Tool (n8n-nodes-base.
 * httpRequestTool, HTTP Request 4.2 made a tool as n8n's NodeTypes does, convertNodeToAiTool) connected to the agent by
 * `ai_tool`, not `main`, making the effect (the test API's charge), and Email Send's human-in-the-loop tool. The provider
 * retries until 2xx (4 tries). Each row asserts what is owed: one charge per event after the retries and no key
 * completed without its effect, or a refusal at publish with nothing done. RT56_DUMP=1 prints every run's record (any
 * connection type, sources, metadata).
 *
 * Seen on HEAD 196676a (a copy of it, its node_modules linked); the working tree meanwhile gained an uncommitted rule
 * refusing a tool not at "Stop Workflow" and the classifiers at Continue (regular output) — see the end.
 *
 * How n8n records a tool call: the tool's run is in runData under the tool's name, its items under `ai_tool` (no
 * `main`), `source: [{ previousNode: <agent>, previousNodeOutput: 0, previousNodeRun: <agent run> }]`; a failed call
 * has `task.error` (also at the tool's default On Error, where n8n-core's aiToolDefaultsToContinue hands the error to the
 * model as text and the agent's run succeeds). The agent's run then records `metadata.subNodeExecutionData.actions`:
 * `[{ nodeName, runIndex, action: { metadata: { itemIndex } } }]`, the agent item each tool run served. n8n records the
 * resumed agent run's own `source` with `previousNodeOutput: 0` whatever output of its parent feeds it
 * (requests-response.js prepareRequestingNodeForResuming → addNodeToBeExecuted(…, 0, …)).
 *
 * Findings (rows marked `it.failing` assert the promise and show it broken):
 *  F1 (AG2, AG5, AG8) DOUBLED: one tool call failing fails every event the agent's run had. trace.ts judgeExecution
 *     `if (task.error) return failEveryInput(…)` reads the failed tool run's `source` (the agent's run) as its input:
 *     every item that run output, so every event of the delivery. AG2 (agent at Continue using error output, tool at its
 *     defaults, B's charge failing once): answers [500, 200], charges [2, 1, 2], every key failed with "Charge: The
 *     service was not able to process your request", then completed. AG5 (the tool at "Stop Workflow": the execution
 *     stops at B's call, A's call done, C's not): [500, 200], charges [2, 1, 1]. AG8 (node path, Split Out → Reserve →
 *     Agent beside Settle): [500, 200], [2, 1, 2]. Fix (trace.ts): for a failed run of a node that ran as a tool (its
 *     data under `ai_tool`, or its source an agent it is connected to by `ai_tool`), find the agent run whose
 *     `metadata.subNodeExecutionData.actions` names `{ nodeName, runIndex }` and fail only the agent's input item at
 *     `action.metadata.itemIndex` (its event); where no action names it, every item as now. AG1 (one event) and AG4 hold.
 *  F2 (AG7, AG13) DOUBLED / LOST: an agent fed by any output but the first of its parent (Loop Over Items' loop output,
 *     an If's false branch, a Switch route, an error output): n8n records the resumed agent run's source as output 0, so
 *     trace.ts pairs the agent's items to the wrong items of its parent. AG7 (Loop Over Items batch 1 → Agent → back,
 *     B's charge failing once): output 0 of the loop's run is [] there, the pairing is lost, untracedFailure: every key
 *     fails, [500, 200], charges [2, 1, 2]. AG14 (the same loop, the tool at "Stop Workflow", the fix the refusal of
 *     the working tree names): the execution stops at B's call with A done, and A's key is failed with B's error
 *     ("Charge: The service was not able to process your request": the failed tool run's source names an agent run
 *     whose items are A's), C's as not reached: [500, 200], charges [2, 1, 1]. AG13 (If VIP? false → Agent (tool at "Stop Workflow") → Notify, B's notice
 *     failing once): B's agent item (index 0) is read as the If's output 0 item 0, A (the VIP event, true branch, no
 *     effect): A's key failed, B's completed: answers [500, 200], notices [0, 0, 1] — B's notice LOST. (With the notice
 *     reading `$('Webhook').item`, n8n's own expression resolves through the same wrong source: every notice failed,
 *     every delivery 500, charges [0, 4, 4].) Fix (trace.ts upstreamOf / the task's source): for a run whose
 *     `metadata.nodeWasResumed` is set, take the parent output from the workflow's connections (the output of
 *     `previousNode` that is connected to this node) when the recorded one is not; or refuse an AI Agent fed by a
 *     parent's output other than 0 until then.
 *  F3 (AG9) DOUBLED ×6: three events, agent at Continue (error output), the model refusing B's first call once: n8n's
 *     Tools Agent V3 (executeBatch with engine requests) loses step with the failed item (the answers of one resume go
 *     to the wrong items' conversations), every item restarts its tool call until "Max iterations (10) reached", each
 *     charged 3 times in the run; every key fails on that error, and the retry does it again: [500, 200], charges
 *     [6, 6, 6]. n8n's own bug; the package cannot see tool calls repeated inside a run. Fix: refuse an AI Agent (3.x)
 *     whose tools may act, given several events at Continue (it runs them as one engine request) — Loop Over Items
 *     (batch size 1) before it — or document it.
 *  F4 (AG12) DOUBLED: one event, the charge failing once and the model calling the tool again (it succeeds): the agent
 *     recovered in the run, but the first tool run's `task.error` fails the key: [500, 200], charges [2]. The class of
 *     "a recovery in the step" documented as not guaranteed (docs/templates.md, the fallback charge); with F1's fix it
 *     stays. Fix: a failed tool run followed, in the same agent item's actions, by a successful run of the same tool is
 *     not the event's failure (or document agents' own retries as not guaranteed).
 *  F5 (TC1, TC2, SA1) DOUBLED: Text Classifier (1.1) and Sentiment Analysis (1.1) at Continue (regular output) put an
 *     event whose classification failed on their FIRST output as `{ error }` paired to it (TextClassifier.node.js
 *     `returnData[0].push`, SentimentAnalysis.node.js the same): the node on the first category's branch acts for it
 *     (reading the event as `$('Webhook').item`), while trace.ts reads the `error` item as the event's failure, and the
 *     retry acts again. TC1 (one event): [500, 200], charges [2]; TC2 (three events, B failing): [500, 200], [1, 2, 1];
 *     SA1: [500, 200], [2]. The class of If version 1 at Continue (refused: conditionFailureHidden) and of "a failure the
 *     workflow tolerates on the event's way to the step" (docs/templates.md, not guaranteed); nodeKinds.ts
 *     takesFailureAsAnAnswer / continuingLosesTheEvent know If, Filter and Switch only. Fix: refuse them at Continue
 *     (regular output); at Continue (using error output) n8n-core moves the item to the error output (TC4 holds).
 *  F6 (HT1) REFUSAL GAP: an agent's tool gated by a human-in-the-loop tool (Email Send's Send and Wait made a tool,
 *     `emailSendHitlTool`, between the agent and Charge by `ai_tool`) makes the execution wait, as the same node in the
 *     step does (HT2: refused, "makes the execution wait"), but the publish check walks `main` connections only
 *     (wiring.ts unsettleableAfterTrigger over n8n's getChildNodes): published. Not run (no SMTP here); after the wait
 *     nothing settles the key (docs: keys held until their retention, 409s, what the resumed run does not recorded).
 *     Fix: check the nodes connected to a step node by `ai_tool` (and their own tools) with mayWait too; the HITL tool's
 *     description keeps Email Send's `restartWebhook` webhooks, so mayWait already answers true for it.
 *  F7 (TC3) OVER-CAUTIOUS: Text Classifier at Stop Workflow first in the step, three events, nothing before it that may
 *     act: refused (eventsTogether), while an If or a Switch there is accepted (isRouting). Its one outside call is the
 *     model's, with no business effect. Fix: count Text Classifier and Sentiment Analysis as routing nodes.
 *
 * Held: AG1 (one event, the tool at its defaults failing once: 500, then one charge), AG3 (agent at Stop Workflow,
 * three events: refused at publish), AG4 (one event, tool at "Stop Workflow" failing once: 500, one charge), AG6 (one
 * event, the model failing after the charge: 500, charged again — a step failing after its effect, documented), AG10
 * (control), AG11 (tool at Retry On Fail: retried in the run, 200, one charge each), TC4, HT2.
 *
 * Answered (in this file's rows since): F1, F2, F3 — a node calling tools that may act (an AI Agent) given several events
 * is refused (wiring.ts checkActingTools, refusal toolsWithSeveralEvents): AG2, AG3, AG5, AG7, AG9, AG13, AG14 at
 * publish, AG8 by Reserve (503), nothing charged; AG11 held before and is refused now with them (over-cautious, the
 * price of the rule). One event per execution, the trigger's default, keeps AG1, AG4, AG6, AG10 as they were. F5:
 * refused at publish (failureDownFirstBranch): TC1, TC2, SA1. F6: a tool that waits counts as the agent waiting
 * (waitsBehindTrigger names it): HT1. F7: classifiers count as routing nodes: TC3 accepted, 200, one charge each. Not
 * answered: F4 (AG12, it.failing), of the documented "a step with several effects that fails after some" kind.
 */

/** A file of n8n 2.41.1's install (its node_modules), loaded with Node's own require. */
function requireInstalled<T>(relative: string): T {
	const modules = join(n8nInstallDirectory(), 'node_modules');
	const { createRequire } = (process as unknown as { getBuiltinModule(id: string): typeof import('node:module') }).getBuiltinModule(
		'node:module',
	);
	return createRequire(join(modules, 'package.json'))(join(modules, relative)) as T;
}
function instanceOf<T>(relative: string): T {
	const module = requireInstalled<Record<string, unknown>>(relative);
	const NodeClass = Object.values(module).find((value) => typeof value === 'function') as new () => T;
	return new NodeClass();
}

/** A node of n8n-nodes-base at `version` made a tool by n8n's own converter, as n8n 2.41.1's NodeTypes builds its synthetic types. */
function convertedTool(nodeFile: string, version: number, converterFile: string, converter: string): INodeType {
	const base = instanceOf<IVersionedNodeType>(`n8n-nodes-base/dist/nodes/${nodeFile}`).getNodeType(version);
	const convert = requireInstalled<Record<string, (item: { description: unknown }) => unknown>>(
		`n8n/dist/tool-generation/${converterFile}`,
	)[converter];
	const description = { ...base.description, properties: [...base.description.properties] };
	const tool = Object.create(base, { description: { value: description, writable: true } }) as INodeType;
	convert(tool as never);
	return tool;
}
/** n8n's HTTP Request Tool: HTTP Request 4.2 as a `…Tool` type. */
const httpRequestTool = () => convertedTool('HttpRequest/HttpRequest.node.js', 4.2, 'ai-tools.js', 'convertNodeToAiTool');
/** n8n's human-in-the-loop tool made of Email Send 2.1 (Send and Wait for Response), a `…HitlTool` type. */
const emailSendHitlTool = () => convertedTool('EmailSend/EmailSend.node.js', 2.1, 'hitl-tools.js', 'convertNodeToHitlTool');

const LANGCHAIN = '@n8n/n8n-nodes-langchain';
/** The AI Agent at versions 3 and 3.1 (n8n's Tools Agent with engine requests), with Agent.node.js's base description. */
function agentV3(): INodeType {
	const { AgentV3 } = requireInstalled<{ AgentV3: new (base: Record<string, unknown>) => INodeType }>(
		'@n8n/n8n-nodes-langchain/dist/nodes/agents/Agent/V3/AgentV3.node.js',
	);
	return new AgentV3({
		displayName: 'AI Agent',
		name: 'agent',
		icon: 'node:ai-agent',
		iconColor: 'black',
		group: ['transform'],
		description: 'Generates an action plan and executes it. Can use external tools.',
		codex: { categories: ['AI'], subcategories: { AI: ['Agents', 'Root Nodes'] } },
		defaultVersion: 3.1,
	});
}
function aiNodeTypes(): Record<string, INodeType> {
	if (!baseNodesInstalled()) return {};
	const dist = '@n8n/n8n-nodes-langchain/dist/nodes';
	return {
		// AgentV3 alone: Agent.node.js also loads version 1, whose SQL Agent needs sqlite3's native binding (not built here).
		[`${LANGCHAIN}.agent`]: agentV3(),
		[`${LANGCHAIN}.lmChatOpenAi`]: instanceOf(`${dist}/llms/LMChatOpenAi/LmChatOpenAi.node.js`),
		[`${LANGCHAIN}.textClassifier`]: instanceOf(`${dist}/chains/TextClassifier/TextClassifier.node.js`),
		[`${LANGCHAIN}.sentimentAnalysis`]: instanceOf(`${dist}/chains/SentimentAnalysis/SentimentAnalysis.node.js`),
		'n8n-nodes-base.httpRequestTool': httpRequestTool(),
		'n8n-nodes-base.emailSendHitlTool': emailSendHitlTool(),
	};
}

/* The stand-in model: OpenAI's chat-completions API answering by a script ---------------------------------------------- */

/** Failures to answer once, by `<stage>:<event id>` (stages: `first` an agent's first call, `after` its call after a tool, `classify`). */
const modelFailures = new Map<string, number>();
/** Events whose agent, told its tool failed, calls the tool once more (as a model often does) instead of answering. */
const retryToolFor = new Set<string>();
/** Every call the model got: `<stage>:<event id>`, and `:failed` when it was refused. */
const modelCalls: string[] = [];
let modelUrl = '';
const EVENT_ID = /\b([a-z]+\d+_[a-z])\b/;

function modelAnswer(body: { messages?: Array<{ role: string; content?: unknown }>; tools?: Array<{ function?: { name?: string } }> }): {
	status: number;
	message?: Record<string, unknown>;
	finish?: string;
	error?: string;
} {
	const messages = body.messages ?? [];
	const text = (message: { content?: unknown }) =>
		typeof message.content === 'string' ? message.content : JSON.stringify(message.content ?? '');
	const id = messages.map(text).join('\n').match(EVENT_ID)?.[1] ?? 'none';
	const toolAnswers = messages.filter((message) => message.role === 'tool');
	const tools = (body.tools ?? []).map((tool) => tool.function?.name).filter((name): name is string => typeof name === 'string');
	const stage = tools.length > 0 ? (toolAnswers.length === 0 ? 'first' : 'after') : 'classify';
	const failures = modelFailures.get(`${stage}:${id}`) ?? 0;
	if (failures > 0) {
		modelFailures.set(`${stage}:${id}`, failures - 1);
		modelCalls.push(`${stage}:${id}:failed`);
		return { status: 400, error: `the model refused (${stage}, ${id})` };
	}
	modelCalls.push(`${stage}:${id}`);
	const toolFailed = stage === 'after' && /error/i.test(text(toolAnswers[toolAnswers.length - 1]));
	if (stage === 'first' || (toolFailed && retryToolFor.delete(id)))
		return {
			status: 200,
			finish: 'tool_calls',
			message: {
				role: 'assistant',
				content: null,
				tool_calls: [{ id: `call_${id}_${modelCalls.length}`, type: 'function', function: { name: tools[0], arguments: '{}' } }],
			},
		};
	if (stage === 'after')
		return {
			status: 200,
			finish: 'stop',
			message: { role: 'assistant', content: `Done for ${id}: ${text(toolAnswers[toolAnswers.length - 1])}` },
		};
	const system = messages.map(text).join('\n').toLowerCase();
	const json = system.includes('sentiment') ? { sentiment: 'Positive', strength: 0.9, confidence: 0.9 } : { charge: true, refund: false };
	return { status: 200, finish: 'stop', message: { role: 'assistant', content: JSON.stringify(json) } };
}

async function model(request: IncomingMessage, response: ServerResponse): Promise<void> {
	const body = await jsonBodyOf(request);
	const answer = modelAnswer(body as never);
	if (answer.status !== 200) {
		response
			.writeHead(answer.status, { 'content-type': 'application/json' })
			.end(JSON.stringify({ error: { message: answer.error, type: 'invalid_request_error', code: null, param: null } }));
		return;
	}
	const base = { id: `chatcmpl-${modelCalls.length}`, created: 0, model: 'gpt-4o-mini' };
	if (body.stream === true) {
		response.writeHead(200, { 'content-type': 'text/event-stream' });
		const { tool_calls: toolCalls, ...rest } = answer.message as { tool_calls?: Array<Record<string, unknown>> };
		const delta = toolCalls ? { ...rest, tool_calls: toolCalls.map((call, index) => ({ index, ...call })) } : rest;
		const chunk = (choice: Record<string, unknown>) =>
			`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, ...choice }] })}\n\n`;
		response.write(chunk({ delta, finish_reason: null }));
		response.write(chunk({ delta: {}, finish_reason: answer.finish }));
		response.end('data: [DONE]\n\n');
		return;
	}
	response.writeHead(200, { 'content-type': 'application/json' }).end(
		JSON.stringify({
			...base,
			object: 'chat.completion',
			choices: [{ index: 0, message: answer.message, finish_reason: answer.finish, logprobs: null }],
			usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
		}),
	);
}

/** The engine with an OpenAI credential whose Base URL is the stand-in model (changed in place: sub-workflows share it). */
function withModelCredential<T extends object>(engine: T): T {
	const holder = engine as unknown as { credentialsHelper: ICredentialsHelper };
	const own = holder.credentialsHelper;
	const properties = () => {
		const credential = instanceOf<{ properties: unknown[] }>('n8n-nodes-base/dist/credentials/OpenAiApi.credentials.js');
		return credential.properties as never;
	};
	holder.credentialsHelper = {
		...own,
		getDecrypted: async (additionalData: unknown, details: unknown, type: string) =>
			type === 'openAiApi'
				? { apiKey: 'sk-test', url: `${modelUrl}/v1`, header: false }
				: await (own.getDecrypted as (...args: unknown[]) => Promise<unknown>)(additionalData, details, type),
		getCredentialsProperties: (type: string) => (type === 'openAiApi' ? properties() : own.getCredentialsProperties(type)),
	} as unknown as ICredentialsHelper;
	return engine;
}

describeWithN8n("red team 56: n8n's AI nodes (an agent's tool making the effect, classifiers at Continue)", () => {
	const rt = subWorkflowRedTeam({
		tag: 'rt56',
		engine: (engine) => withModelCredential(engine),
		baseNodeFiles: {
			'n8n-nodes-base.splitOut': 'Transform/SplitOut/SplitOut.node.js',
			'n8n-nodes-base.emailSend': 'EmailSend/EmailSend.node.js',
		},
		nodeTypes: aiNodeTypes(),
	});
	const { effectsAt, httpCall, record, nodeStatuses, statuses } = rt;
	const { nodeTemplate, useNodePath, provideNodePath } = rt.nodePath;

	let modelServer: http.Server | undefined;
	beforeAll(async () => {
		modelServer = http.createServer((request, response) => void model(request, response));
		await new Promise<void>((resolve) => modelServer!.listen(0, '127.0.0.1', resolve));
		modelUrl = `http://127.0.0.1:${(modelServer.address() as AddressInfo).port}`;
	});
	afterAll(async () => {
		if (modelServer) await new Promise((resolve) => modelServer!.close(resolve));
	});
	afterEach(() => {
		modelFailures.clear();
		retryToolFor.clear();
	});

	/* Builders -------------------------------------------------------------------------------------------------------- */
	const failModel = (stage: 'first' | 'after' | 'classify', id: string) => void modelFailures.set(`${stage}:${id}`, 1);
	const callsFor = (p: string) => modelCalls.filter((call) => call.split(':')[1]?.replace(/_[a-z]$/, '') === p);
	const chatModel = () =>
		({
			id: 'OpenAI Chat Model',
			name: 'OpenAI Chat Model',
			type: `${LANGCHAIN}.lmChatOpenAi`,
			typeVersion: 1.2,
			position: [400, 300],
			parameters: { model: { __rl: true, value: 'gpt-4o-mini', mode: 'list' }, options: {} },
			credentials: { openAiApi: { id: 'openai', name: 'OpenAI' } },
		}) as INode;
	/** The AI Agent (3.1, Tools Agent), its prompt naming the event. */
	const agent = (extra: Partial<INode> = {}) =>
		({
			id: 'Agent',
			name: 'Agent',
			type: `${LANGCHAIN}.agent`,
			typeVersion: 3.1,
			position: [400, 0],
			parameters: { promptType: 'define', text: '={{ "Charge event " + $json.body.id }}', options: {} },
			...extra,
		}) as INode;
	/** n8n's HTTP Request Tool charging the event of the item the agent works on (its input item is the agent's, merged with the call's arguments). */
	const chargeTool = (extra: Partial<INode> = {}) =>
		({
			...httpCall('Charge', 'charge', extra, '={{ JSON.stringify({ id: $json.body.id }) }}'),
			type: 'n8n-nodes-base.httpRequestTool',
			position: [600, 300],
			parameters: {
				...httpCall('Charge', 'charge').parameters,
				toolDescription: 'Charges the customer for the event',
			} as INodeParameters,
		}) as INode;
	const aiLinks = (target: string, tool = true): IConnections =>
		({
			'OpenAI Chat Model': { ai_languageModel: [[{ node: target, type: 'ai_languageModel', index: 0 }]] },
			...(tool ? { Charge: { ai_tool: [[{ node: target, type: 'ai_tool', index: 0 }]] } } : {}),
		}) as IConnections;
	/** Trigger → Agent (with its model and the Charge tool). */
	const agentStep = (agentExtra: Partial<INode> = {}, toolExtra: Partial<INode> = {}): Step => ({
		nodes: [agent(agentExtra), chatModel(), chargeTool(toolExtra)],
		connections: {
			...aiLinks('Agent'),
			Agent: { main: agentExtra.onError === 'continueErrorOutput' ? [[], []] : [[]] },
		} as IConnections,
		heads: ['Agent'],
	});
	const ALL_COMPLETED = ['completed', 'completed', 'completed'];
	/** Loop Over Items (batch 1) → Agent (at Stop Workflow) → back to the loop, `tool` its Charge tool. */
	const loopAgentStep = (tool: INode): Step => ({
		nodes: [at(node('Loop', 'splitInBatches', 3, { batchSize: 1, options: {} }), 0, 200), agent(), chatModel(), tool],
		connections: { ...aiLinks('Agent'), Loop: { main: [[], link('Agent')] }, Agent: { main: [link('Loop')] } } as IConnections,
		heads: ['Loop'],
	});
	/** What the refusal of an agent whose Charge tool may act, given several events, says. */
	const TOOLS_REFUSAL = '"Agent" calls "Charge", a tool that may act';
	/**
	 * The node path: Reserve refused before the step, answering 503 with its refusal on each item of its Not Reserved
	 * output; nothing charged.
	 */
	const expectReserveRefusedForTools = (answers: Array<number | undefined>, charges: number[], runs: IRun[]) => {
		const notReserved = runs[0]?.data.resultData.runData[rt.fieldReserve().name]?.[0]?.data?.main[3] ?? [];
		expect({ answers: [...new Set(answers)], charges, refusal: notReserved.map((item) => String(item.json.error)).join('\n') }).toEqual({
			answers: [503],
			charges: [0, 0, 0],
			refusal: expect.stringContaining(TOOLS_REFUSAL),
		});
	};
	/** Refused at publish for an agent whose Charge tool may act, given several events: nothing charged. */
	const expectRefusedForTools = (r: { refusal: string | boolean; charges: number[] }) =>
		expect({ refusal: r.refusal, charges: r.charges }).toEqual({
			refusal: expect.stringContaining(TOOLS_REFUSAL),
			charges: [0, 0, 0],
		});
	const idsOf = (p: string) => threeEvents(p).map((event) => event.id);

	/** One event per delivery (no Events Path): its id `<p>_a`. */
	const runOne = async (p: string, step: Step, fail?: () => void) => {
		const id = `${p}_a`;
		rt.useTrigger(`wf-rt56-${p}`);
		const refusal = await rt.refusedAtPublish(step);
		fail?.();
		const { answers, runs } = await rt.provide({ id, amount: 300 }, step);
		dumpAi(p, runs);
		return {
			refusal: typeof refusal === 'string' ? refusal.slice(0, 160) : false,
			answers,
			charges: [effectsAt('charge', id)],
			keys: await statuses([id]),
			model: callsFor(p),
		};
	};
	/**
	 * With RT56_DUMP set: each run's error, every node's output items on any connection type (a tool's runs keep theirs
	 * under `ai_tool`) with their pairing, and the agent's and the tool's sources.
	 */
	const dumpAi = (p: string, runs: IRun[]) => {
		if (!process.env.RT56_DUMP) return;
		for (const run of runs)
			process.stderr.write(
				`RT56 ${p} ${run.data.resultData.error?.message?.slice(0, 200)} ${JSON.stringify(
					Object.entries(run.data.resultData.runData).map(([name, tasks]) => [
						name,
						tasks.map((task) => ({
							error: task.error?.message?.slice(0, 80),
							source: task.source,
							metadata: task.metadata,
							data: Object.fromEntries(
								Object.entries(task.data ?? {}).map(([type, outputs]) => [
									type,
									Array.isArray(outputs)
										? outputs.map((items) =>
												Array.isArray(items) ? items.map((item) => [JSON.stringify(item.json).slice(0, 90), item.pairedItem]) : items,
											)
										: outputs,
								]),
							),
						})),
					]),
				)}\n`,
			);
	};
	/** Three events in one delivery (Events Path), `fail` set up after publish. */
	const runThree = async (p: string, step: Step, fail?: () => void) => {
		const list = threeEvents(p);
		rt.useTrigger(`wf-rt56-${p}`, EVENTS);
		const refusal = await rt.refusedAtPublish(step);
		fail?.();
		const { answers, runs } = await rt.provide(events(list), step);
		dumpAi(p, runs);
		return {
			refusal: typeof refusal === 'string' ? refusal.slice(0, 160) : false,
			answers,
			charges: idsOf(p).map((id) => effectsAt('charge', id)),
			keys: await statuses(idsOf(p)),
			model: callsFor(p),
			// Why each key failed on the way (the last error the store kept), for the findings.
			errors: rt.keyRows().map((row) => row.last_error?.slice(0, 160) ?? null),
		};
	};

	/* A. An AI Agent whose tool (ai_tool) makes the effect ------------------------------------------------------------ */
	describe('A. an AI Agent whose HTTP Request Tool charges the event', () => {
		it('AG10 control: one event, Agent → Charge tool, nothing failing: one charge, completed, 200', async () => {
			const r = record('AG10 agent tool control', await runOne('ag10', agentStep()));
			expect(r).toMatchObject({ refusal: false, answers: [200], charges: [1], keys: ['completed'] });
			expect(r.model).toEqual(['first:ag10_a', 'after:ag10_a']);
		});
		it("AG1 one event, the Charge tool at its defaults, the charge API failing once: n8n records the tool run's error, the key fails, 500, then one charge, completed", async () => {
			const p = 'ag1';
			const r = record('AG1 agent tool fails', await runOne(p, agentStep(), () => rt.failNext(`charge:${p}_a`)));
			expect({ refusal: r.refusal, answers: r.answers, charges: r.charges, keys: r.keys }).toEqual({
				refusal: false,
				answers: [500, 200],
				charges: [1],
				keys: ['completed'],
			});
		});
		it("AG2 three events, Agent at Continue (error output), the Charge tool at its defaults, B's charge failing once: refused (several events, a tool that may act), nothing charged", async () => {
			const p = 'ag2';
			const r = record(
				'AG2 agent continue tool fails for B',
				await runThree(p, agentStep({ onError: 'continueErrorOutput' }), () => rt.failNext(`charge:${p}_b`)),
			);
			expectRefusedForTools(r);
		});
		it('AG3 three events, Agent at Stop Workflow: refused at publish naming the agent, nothing charged', async () => {
			const p = 'ag3';
			const r = record('AG3 agent stop workflow three', await runThree(p, agentStep()));
			expectRefusedForTools(r);
		});
		it('AG4 one event, the Charge tool at On Error "Stop Workflow", the charge API failing once: 500, then one charge, completed', async () => {
			const p = 'ag4';
			const r = record(
				'AG4 agent tool stop fails',
				await runOne(p, agentStep({}, { onError: 'stopWorkflow' }), () => rt.failNext(`charge:${p}_a`)),
			);
			expect({ answers: r.answers, charges: r.charges, keys: r.keys }).toEqual({ answers: [500, 200], charges: [1], keys: ['completed'] });
		});
		it('AG5 three events, Agent at Continue (error output), the Charge tool at On Error "Stop Workflow", B\'s charge failing once: refused, nothing charged', async () => {
			const p = 'ag5';
			const r = record(
				'AG5 agent continue tool stop fails for B',
				await runThree(p, agentStep({ onError: 'continueErrorOutput' }, { onError: 'stopWorkflow' }), () => rt.failNext(`charge:${p}_b`)),
			);
			expectRefusedForTools(r);
		});
		it('AG6 one event, the model failing after the tool charged: 500, the retry charges again (a step failing after its effect, documented)', async () => {
			const p = 'ag6';
			const r = record('AG6 agent model fails after tool', await runOne(p, agentStep(), () => failModel('after', `${p}_a`)));
			expect({ answers: r.answers, charges: r.charges, keys: r.keys }).toEqual({ answers: [500, 200], charges: [2], keys: ['completed'] });
		});
		it("AG7 three events, Loop Over Items (batch 1) → Agent (Stop Workflow) → back, B's charge failing once: refused (the agent's later runs lose their place in the loop), nothing charged", async () => {
			const p = 'ag7';
			const step = loopAgentStep(chargeTool());
			const r = record('AG7 loop agent tool fails for B', await runThree(p, step, () => rt.failNext(`charge:${p}_b`)));
			expectRefusedForTools(r);
		});
		it("AG8 node path, Settle beside: Split Out → Reserve (Field) → Agent (error output) with the Charge tool, B's charge failing once: Reserve refuses (503), nothing charged", async () => {
			const p = 'ag8';
			const list = threeEvents(p);
			useNodePath(`wf-rt56-${p}`);
			rt.failNext(`charge:${p}_b`);
			const { answers, runs } = await provideNodePath(events(list), () =>
				nodeTemplate(agentStep({ onError: 'continueErrorOutput' }), {
					reserve: rt.fieldReserve(),
					before: SPLIT_OUT_EVENTS,
					settle: true,
				}),
			);
			dumpAi(p, runs);
			const charges = idsOf(p).map((id) => effectsAt('charge', id));
			const keys = await nodeStatuses(idsOf(p));
			record('AG8 node path settle agent', { answers, charges, keys, model: callsFor(p) });
			expectReserveRefusedForTools(answers, charges, runs);
		});
		it('AG8b node path, Mark Complete after the step (no Settle): Split Out → Reserve (Field) → Agent (error output) with the Charge tool: Reserve refuses (503), nothing charged', async () => {
			const p = 'ag8b';
			useNodePath(`wf-rt56-${p}`);
			const step = agentStep({ onError: 'continueErrorOutput' });
			const withComplete: Step = {
				...step,
				nodes: [...step.nodes, rt.nodePath.completeNode()],
				connections: { ...step.connections, Agent: { main: [link('Mark Complete'), []] } } as IConnections,
			};
			const { answers, runs } = await provideNodePath(events(threeEvents(p)), () =>
				nodeTemplate(withComplete, { reserve: rt.fieldReserve(), before: SPLIT_OUT_EVENTS }),
			);
			const charges = idsOf(p).map((id) => effectsAt('charge', id));
			record('AG8b node path complete agent', { answers, charges, model: callsFor(p) });
			expectReserveRefusedForTools(answers, charges, runs);
		});
		it("AG11 control: three events, Agent at Continue (error output), the Charge tool at Retry On Fail (2 tries), B's charge failing once: refused (over-cautious: it held, retried by n8n in the run)", async () => {
			const p = 'ag11';
			const r = record(
				'AG11 agent tool retry on fail',
				await runThree(p, agentStep({ onError: 'continueErrorOutput' }, { retryOnFail: true, maxTries: 2, waitBetweenTries: 0 }), () =>
					rt.failNext(`charge:${p}_b`),
				),
			);
			// Held before tools with several events were refused (200, one charge each); now refused with the rest (over-cautious).
			expectRefusedForTools(r);
		});
		it.failing(
			'AG12 one event, the charge API failing once and the model calling the tool again after its error: one charge, completed, 200 (the agent recovered in the run)',
			async () => {
				const p = 'ag12';
				const r = record(
					'AG12 agent retries tool itself',
					await runOne(p, agentStep(), () => {
						rt.failNext(`charge:${p}_a`);
						retryToolFor.add(`${p}_a`);
					}),
				);
				expect({ answers: r.answers, charges: r.charges, keys: r.keys, model: r.model }).toEqual({
					answers: [200],
					charges: [1],
					keys: ['completed'],
					model: ['first:ag12_a', 'after:ag12_a', 'after:ag12_a'],
				});
			},
		);
		it("AG13 three events, If (VIP?) false → Agent (error output, its Charge tool at Stop Workflow) → Notify (error output), B's notice failing once: refused, nothing charged or notified", async () => {
			const p = 'ag13';
			const notify = httpCall(
				'Notify',
				'notify',
				{ onError: 'continueErrorOutput' },
				// The agent's answer ("Done for <id>: …") sent on: the event's id read from it.
				"={{ JSON.stringify({ id: $json.output.slice(9, $json.output.indexOf(':')) }) }}",
			);
			const step: Step = {
				nodes: [
					at(ifTrue('$json.body.vip'), 0, 200),
					agent({ onError: 'continueErrorOutput' }),
					chatModel(),
					chargeTool({ onError: 'stopWorkflow' }),
					at(notify, 0, 800),
				],
				connections: {
					...aiLinks('Agent'),
					'VIP?': { main: [[], link('Agent')] },
					Agent: { main: [link('Notify'), []] },
					Notify: { main: [[], []] },
				} as IConnections,
				heads: ['VIP?'],
			};
			const r = await runThree(p, step, () => rt.failNext(`notify:${p}_b`));
			const notices = idsOf(p).map((id) => effectsAt('notify', id));
			record('AG13 if false agent notify', { ...r, notices });
			expectRefusedForTools(r);
			expect(notices).toEqual([0, 0, 0]);
		});
		it('AG14 three events, Loop Over Items (batch 1) → Agent (Stop Workflow) → back, the Charge tool at On Error "Stop Workflow", B\'s charge failing once: refused, nothing charged', async () => {
			const p = 'ag14';
			const step = loopAgentStep(chargeTool({ onError: 'stopWorkflow' }));
			const r = record('AG14 loop agent tool stop fails for B', await runThree(p, step, () => rt.failNext(`charge:${p}_b`)));
			expectRefusedForTools(r);
		});
		it("AG9 three events, Agent at Continue (error output), the model failing for B before any tool call: refused (n8n's agent loses track of its items: [6, 6, 6] before), nothing charged", async () => {
			const p = 'ag9';
			const r = record(
				'AG9 agent model fails first for B',
				await runThree(p, agentStep({ onError: 'continueErrorOutput' }), () => failModel('first', `${p}_b`)),
			);
			expectRefusedForTools(r);
		});
	});

	/* B. Text Classifier and Sentiment Analysis: an event whose classification failed ----------------------------------- */
	describe('B. classifiers whose failed event goes down their first output', () => {
		/** Text Classifier (1.1): charge (output 0) / refund (output 1), the event's text the prompt. */
		const classifier = (extra: Partial<INode> = {}) =>
			({
				id: 'Classify',
				name: 'Classify',
				type: `${LANGCHAIN}.textClassifier`,
				typeVersion: 1.1,
				position: [400, 0],
				parameters: {
					inputText: '={{ "Event " + $json.body.id + " asks for a payment" }}',
					categories: {
						categories: [
							{ category: 'charge', description: 'The event asks for a payment' },
							{ category: 'refund', description: 'The event asks for money back' },
						],
					},
					options: {},
				},
				...extra,
			}) as INode;
		/** The charge reading the event back through n8n's pairing ($('Webhook').item), as a user does after a node that reshapes items. */
		const PAIRED_BODY = "={{ JSON.stringify({ id: $('Webhook').item.json.body.id }) }}";
		const classified = (router: INode, outputs: number, errorOutput = false): Step => ({
			nodes: [
				router,
				chatModel(),
				httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }, PAIRED_BODY, {}, 0),
				httpCall('Refund', 'refund', { onError: 'continueErrorOutput' }, PAIRED_BODY, {}, 200),
			].map((each, index) => (index >= 2 ? at(each, (index - 2) * 200, 700) : each)),
			connections: {
				...aiLinks(router.name, false),
				[router.name]: {
					main: [link('Charge'), link('Refund'), ...Array.from({ length: outputs - 2 + (errorOutput ? 1 : 0) }, () => [])],
				},
				Charge: { main: [[], []] },
				Refund: { main: [[], []] },
			} as IConnections,
			heads: [router.name],
		});

		it('TC1 one event, Text Classifier at Continue (regular output) → charge / refund, the model failing once: refused at publish, nothing charged', async () => {
			const p = 'tc1';
			const r = record(
				'TC1 classifier continue regular one',
				await runOne(p, classified(classifier({ onError: 'continueRegularOutput' }), 2), () => failModel('classify', `${p}_a`)),
			);
			expect({ refusal: r.refusal, charges: r.charges }).toEqual({
				refusal: expect.stringContaining('"Classify" continues on error into its regular output'),
				charges: [0],
			});
		});
		it("TC2 three events, Text Classifier at Continue (regular output), B's classification failing once: refused at publish, nothing charged", async () => {
			const p = 'tc2';
			const r = record(
				'TC2 classifier continue regular three',
				await runThree(p, classified(classifier({ onError: 'continueRegularOutput' }), 2), () => failModel('classify', `${p}_b`)),
			);
			expect({ refusal: r.refusal, charges: r.charges }).toEqual({
				refusal: expect.stringContaining('"Classify" continues on error into its regular output'),
				charges: [0, 0, 0],
			});
		});
		it('TC3 three events, Text Classifier at Stop Workflow first in the step (nothing acted before it): accepted as a Switch is, 200, one charge each', async () => {
			const p = 'tc3';
			const r = record('TC3 classifier stop three', await runThree(p, classified(classifier(), 2)));
			expect({ refusal: r.refusal, answers: r.answers, charges: r.charges }).toEqual({
				refusal: false,
				answers: [200],
				charges: [1, 1, 1],
			});
		});
		it("TC4 control: three events, Text Classifier at Continue (error output), B's classification failing once: B retried alone, one charge each", async () => {
			const p = 'tc4';
			const r = record(
				'TC4 classifier continue error output three',
				await runThree(p, classified(classifier({ onError: 'continueErrorOutput' }), 2, true), () => failModel('classify', `${p}_b`)),
			);
			expect({ refusal: r.refusal, answers: r.answers, charges: r.charges, keys: r.keys }).toEqual({
				refusal: false,
				answers: [500, 200],
				charges: [1, 1, 1],
				keys: ALL_COMPLETED,
			});
		});
		it('SA1 one event, Sentiment Analysis at Continue (regular output) → Positive: charge / Neutral: refund, the model failing once: refused at publish, nothing charged', async () => {
			const p = 'sa1';
			const sentiment = {
				id: 'Classify',
				name: 'Classify',
				type: `${LANGCHAIN}.sentimentAnalysis`,
				typeVersion: 1.1,
				position: [400, 0],
				parameters: { inputText: '={{ "Event " + $json.body.id + ": thank you, all good" }}', options: {} },
				onError: 'continueRegularOutput',
			} as INode;
			const r = record(
				'SA1 sentiment continue regular one',
				await runOne(p, classified(sentiment, 3), () => failModel('classify', `${p}_a`)),
			);
			expect({ refusal: r.refusal, charges: r.charges }).toEqual({
				refusal: expect.stringContaining('"Classify" continues on error into its regular output'),
				charges: [0],
			});
		});
	});

	/* C. A tool that makes the execution wait (human in the loop) ---------------------------------------------------------- */
	describe("C. a Send and Wait node, as a step node and as an agent's human-in-the-loop tool", () => {
		const SEND_AND_WAIT = {
			fromEmail: 'shop@example.com',
			toEmail: 'ops@example.com',
			subject: 'Approve the charge',
			message: '={{ "Charge " + $json.body.id + "?" }}',
			approvalOptions: { values: { approvalType: 'single' } },
			options: {},
		};
		const smtp = { smtp: { id: 'smtp', name: 'SMTP' } };
		it('HT2 control: one event, Email Send (Send and Wait for Response) before the charge: refused at publish naming it', async () => {
			rt.useTrigger('wf-rt56-ht2');
			const approve = node('Approve', 'emailSend', 2.1, { operation: 'sendAndWait', ...SEND_AND_WAIT }, { credentials: smtp });
			const step: Step = {
				nodes: [approve, at(httpCall('Charge', 'charge', { onError: 'continueErrorOutput' }), 0, 700)],
				connections: { Approve: { main: [link('Charge')] }, Charge: { main: [[], []] } } as IConnections,
				heads: ['Approve'],
			};
			const refusal = record('HT2 send and wait in step', await rt.refusedAtPublish(step));
			expect(refusal).toEqual(expect.stringContaining('"Approve"'));
		});
		it("HT1 one event, Agent → its Charge tool gated by Email Send's human-in-the-loop tool (Send and Wait, ai_tool): refused at publish as the same node in the step is", async () => {
			rt.useTrigger('wf-rt56-ht1');
			const approve = {
				...node('Approve', 'emailSendHitlTool', 2.1, { operation: 'sendAndWait', ...SEND_AND_WAIT }, { credentials: smtp }),
				position: [600, 300],
			} as INode;
			const step: Step = {
				nodes: [agent(), chatModel(), approve, { ...chargeTool(), position: [800, 500] } as INode],
				connections: {
					'OpenAI Chat Model': { ai_languageModel: [[{ node: 'Agent', type: 'ai_languageModel', index: 0 }]] },
					Approve: { ai_tool: [[{ node: 'Agent', type: 'ai_tool', index: 0 }]] },
					Charge: { ai_tool: [[{ node: 'Approve', type: 'ai_tool', index: 0 }]] },
					Agent: { main: [[]] },
				} as IConnections,
				heads: ['Agent'],
			};
			const refusal = record('HT1 hitl tool', await rt.refusedAtPublish(step));
			expect(refusal).toEqual(expect.stringContaining('"Approve" makes the execution wait'));
		});
	});
});
