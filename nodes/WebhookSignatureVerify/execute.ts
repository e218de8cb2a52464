import { NodeOperationError, type IDataObject, type IExecuteFunctions, type INodeExecutionData } from 'n8n-workflow';

import { isHeaderBag } from '../../lib/headers';
import {
	FAILURE_DESCRIPTIONS,
	resolveSecrets,
	verifySignature,
	type HeaderBag,
	type SignatureScheme,
	type VerifySignatureResult,
} from '../../lib/signature';
import { toNodeError } from '../shared/nodeError';
import { readRawBody } from '../shared/rawBody';
import { configuredSecrets, CREDENTIAL_TYPE } from '../shared/signingSecret';
import { readParameters, type VerifyParameters } from './parameters';

/** Output indices, in the order of `outputNames`. */
export const VALID_OUTPUT = 0;
export const INVALID_OUTPUT = 1;

/**
 * What the node adds to each item as `json.signature`. `reason` is one of the core's failure
 * reasons, or `error` when the item could not be checked at all (only with "Continue On Fail").
 */
export interface SignatureField extends IDataObject {
	valid: boolean;
	scheme?: SignatureScheme;
	reason?: string;
	timestamp?: number;
}

/** Verifies every item and routes it to the Valid or the Invalid output. */
export async function verifyItems(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const items = this.getInputData();
	const routed: INodeExecutionData[][] = [[], []];
	const secrets = await readSecrets(this);
	// One clock reading for the whole batch: items of one execution are judged against the same now.
	const nowSeconds = Math.floor(Date.now() / 1000);

	for (let itemIndex = 0; itemIndex < items.length; itemIndex++) {
		const item = items[itemIndex] as INodeExecutionData;
		let scheme: SignatureScheme | undefined;
		try {
			const parameters = readParameters(this, itemIndex);
			scheme = parameters.scheme;
			const result = await verifyItem(this, item, itemIndex, parameters, secrets, nowSeconds);
			const output = withSignature(item, itemIndex, toField(result));
			if (result.valid) {
				routed[VALID_OUTPUT]?.push(output);
				continue;
			}
			if (parameters.onInvalid === 'throw') {
				const error = new NodeOperationError(this.getNode(), `Webhook signature rejected: ${result.reason}`, {
					itemIndex,
					description: FAILURE_DESCRIPTIONS[result.reason],
				});
				if (!this.continueOnFail()) throw error;
				output.json.error = error.message;
			}
			routed[INVALID_OUTPUT]?.push(output);
		} catch (error) {
			if (!this.continueOnFail()) throw toNodeError(this.getNode(), error, itemIndex);
			// With "Continue On Fail" an item that could not be checked still must not pass: it goes to Invalid.
			const signature: SignatureField = { valid: false, reason: 'error' };
			if (scheme !== undefined) signature.scheme = scheme;
			const output = withSignature(item, itemIndex, signature);
			output.json.error = error instanceof Error ? error.message : String(error);
			routed[INVALID_OUTPUT]?.push(output);
		}
	}
	return routed;
}

/**
 * The credential's secrets, newest first, or the configuration error that every item then reports
 * (as any other per-item error: it stops the execution, or with "Continue On Fail" sends the item
 * to Invalid).
 */
async function readSecrets(ctx: IExecuteFunctions): Promise<readonly string[] | Error> {
	// An unreadable credential is an item error too: thrown from here, under "On Error: Continue" n8n
	// would pass the unchecked items on through Valid.
	try {
		const credentials = await ctx.getCredentials(CREDENTIAL_TYPE);
		return resolveSecrets(configuredSecrets(credentials));
	} catch (error) {
		return error instanceof Error ? error : new Error(String(error));
	}
}

async function verifyItem(
	ctx: IExecuteFunctions,
	item: INodeExecutionData,
	itemIndex: number,
	parameters: VerifyParameters,
	secrets: readonly string[] | Error,
	nowSeconds: number,
): Promise<VerifySignatureResult> {
	if (secrets instanceof Error) throw toNodeError(ctx.getNode(), secrets, itemIndex);
	const headers = readHeaders(ctx, item, parameters.headersField, itemIndex);
	const rawBody = await requireRawBody(ctx, item, parameters.rawBodyProperty, itemIndex);
	try {
		return verifySignature({
			scheme: parameters.scheme,
			headers,
			rawBody,
			secrets,
			toleranceSeconds: parameters.toleranceSeconds,
			nowSeconds,
			generic: parameters.generic,
		});
	} catch (error) {
		// Only configuration errors (SignatureConfigError) come out of the core; their messages
		// never contain a secret.
		throw toNodeError(ctx.getNode(), error, itemIndex);
	}
}

/** The Webhook node's headers object, as it is: the core reads each header by the package's one rule. */
function readHeaders(ctx: IExecuteFunctions, item: INodeExecutionData, field: string, itemIndex: number): HeaderBag {
	const raw = item.json[field];
	if (!isHeaderBag(raw)) {
		throw new NodeOperationError(ctx.getNode(), `No request headers in the item field "${field}"`, {
			itemIndex,
			description:
				'Connect this node directly after the Webhook node, which puts the request headers in "headers", or set Options → Headers Field.',
		});
	}
	return raw;
}

/** The exact request bytes; without them no signature can be checked, which is a setup error. */
async function requireRawBody(ctx: IExecuteFunctions, item: INodeExecutionData, property: string, itemIndex: number): Promise<Buffer> {
	const rawBody = await readRawBody(ctx, item, itemIndex, property);
	if (rawBody === undefined) {
		throw new NodeOperationError(ctx.getNode(), `No raw request body in the binary field "${property}"`, {
			itemIndex,
			description:
				'Turn on the Webhook node\'s "Raw Body" option (Add Option → Raw Body) and connect this node directly after it. Signatures are computed over the exact bytes received; the parsed JSON body cannot reproduce them.',
		});
	}
	return rawBody;
}

function toField(result: VerifySignatureResult): SignatureField {
	const field: SignatureField = { valid: result.valid, scheme: result.scheme };
	if (!result.valid) field.reason = result.reason;
	if (result.timestamp !== undefined) field.timestamp = result.timestamp;
	return field;
}

/** The input item, unchanged but for `json.signature`, linked to its input for `$('…').item`. */
function withSignature(item: INodeExecutionData, itemIndex: number, signature: SignatureField): INodeExecutionData {
	const output: INodeExecutionData = { json: { ...item.json, signature }, pairedItem: { item: itemIndex } };
	if (item.binary !== undefined) output.binary = item.binary;
	return output;
}
