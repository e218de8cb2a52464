import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';

import type { GenericHmacOptions, SignatureScheme } from '../../lib/signature';
import { readGenericHmac } from '../shared/genericHmac';
import { toleranceSecondsOf } from '../shared/providerOptions';

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
		toleranceSeconds: toleranceSecondsOf(scheme, (name, fallback) => ctx.getNodeParameter(name, itemIndex, fallback)),
		generic: scheme === 'generic' ? readGenericHmac((name, fallback) => ctx.getNodeParameter(name, itemIndex, fallback)) : undefined,
		onInvalid: ctx.getNodeParameter('onInvalid', itemIndex, 'route') as InvalidAction,
		headersField: stringOr(options.headersField, 'headers'),
		rawBodyProperty: stringOr(options.rawBodyProperty, 'data'),
	};
}

function stringOr(value: unknown, fallback: string): string {
	return typeof value === 'string' && value.trim() !== '' ? value.trim() : fallback;
}
