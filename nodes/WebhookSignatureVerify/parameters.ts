import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';

import {
	DEFAULT_TOLERANCE_SECONDS,
	type GenericHmacOptions,
	type HmacAlgorithm,
	type SignatureEncoding,
	type SignatureScheme,
} from '../../lib/signature';
import { TIMESTAMPED_SCHEMES } from '../shared/providerOptions';

/** What to do with a request whose signature does not verify. */
export type InvalidAction = 'route' | 'throw';

/** The node's parameters for one item, typed; every cast of the node lives here. */
export interface VerifyParameters {
	scheme: SignatureScheme;
	toleranceSeconds: number;
	generic?: GenericHmacOptions;
	onInvalid: InvalidAction;
	headersField: string;
	rawBodyProperty: string;
}


/** Reads the parameters of one item; hidden parameters are only read for the scheme that shows them. */
export function readParameters(ctx: IExecuteFunctions, itemIndex: number): VerifyParameters {
	const scheme = ctx.getNodeParameter('scheme', itemIndex) as SignatureScheme;
	const options = ctx.getNodeParameter('options', itemIndex, {}) as IDataObject;
	return {
		scheme,
		toleranceSeconds: TIMESTAMPED_SCHEMES.includes(scheme)
			? (ctx.getNodeParameter('toleranceSeconds', itemIndex, DEFAULT_TOLERANCE_SECONDS) as number)
			: DEFAULT_TOLERANCE_SECONDS,
		generic: scheme === 'generic' ? readGeneric(ctx, itemIndex) : undefined,
		onInvalid: ctx.getNodeParameter('onInvalid', itemIndex, 'route') as InvalidAction,
		headersField: stringOr(options.headersField, 'headers'),
		rawBodyProperty: stringOr(options.rawBodyProperty, 'data'),
	};
}

function readGeneric(ctx: IExecuteFunctions, itemIndex: number): GenericHmacOptions {
	const signedContent = ctx.getNodeParameter('signedContent', itemIndex, 'body') as GenericHmacOptions['signedContent'];
	return {
		algorithm: ctx.getNodeParameter('algorithm', itemIndex, 'sha256') as HmacAlgorithm,
		encoding: ctx.getNodeParameter('encoding', itemIndex, 'hex') as SignatureEncoding,
		signatureHeader: (ctx.getNodeParameter('signatureHeader', itemIndex, '') as string).trim(),
		signaturePrefix: ctx.getNodeParameter('signaturePrefix', itemIndex, '') as string,
		signedContent,
		timestampHeader:
			signedContent === 'timestampDotBody'
				? (ctx.getNodeParameter('timestampHeader', itemIndex, '') as string).trim()
				: undefined,
	};
}

function stringOr(value: unknown, fallback: string): string {
	return typeof value === 'string' && value.trim() !== '' ? value.trim() : fallback;
}
