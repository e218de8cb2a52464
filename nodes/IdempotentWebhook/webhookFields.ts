import type { IDataObject } from 'n8n-workflow';

/*
 * n8n 2.x reads a webhook description field straight from the node's parameters, without its
 * expression engine, when the field declares a resolver under this symbol and still carries the
 * exact template the resolver stands for, and the node's parameters hold no expression
 * (n8n-workflow's webhook-description-fields, read in 2.41.1). n8n reads the method and the path of
 * the trigger's webhook on every request; n8n 1.x, and a trigger whose parameters hold an
 * expression, evaluate the template instead, to the same value.
 */
const WEBHOOK_RESOLVERS = Symbol.for('n8n.webhookDescriptionResolvers');

interface ParameterField {
	template: string;
	resolve: (parameters: IDataObject | undefined) => unknown;
}

/** The description fields that each read the node parameter of the same name: templates, and their resolvers for n8n. */
export function parameterFields<Name extends string>(...names: Name[]): Record<Name, string> {
	const templates = {} as Record<Name, string>;
	const resolvers = {} as Record<Name, ParameterField>;
	for (const name of names) {
		const template = `={{$parameter["${name}"]}}`;
		templates[name] = template;
		resolvers[name] = { template, resolve: (parameters) => parameters?.[name] };
	}
	// The symbol key is invisible to JSON (the editor's copy of the description) and to every other reader.
	return Object.assign(templates, { [WEBHOOK_RESOLVERS]: resolvers });
}
