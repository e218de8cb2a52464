import { InvalidConfigurationError } from '../errors';
import type { KeyConfig } from '../keys/deriveKey';
import { parseFieldPath, valueAtPath, type PathStep } from '../keys/fieldPath';
import { isProviderPreset, PROVIDER_PRESETS } from '../keys/presets';
import { arrayElementsAt } from '../keys/rawJsonMember';

/*
 * Several events in one delivery (HubSpot sends up to 100 per request; SendGrid, Segment and Adyen
 * send arrays): the trigger's Events Path names the array, and each of its elements is keyed,
 * reserved and settled as if it were the body of a delivery of its own. The signature is checked
 * once, over the whole request, before any of this.
 */

/**
 * The most events one delivery may carry: ten times HubSpot's hundred. All of them are reserved in
 * one store call (one transaction, one lock per key) and run as the items of one execution, whose
 * end settles them together: a bound keeps that call and that execution the size a provider's
 * batch is, rather than whatever a request can hold.
 */
export const MAX_EVENTS_PER_DELIVERY = 1000;

/** One event of a delivery: what its key is derived from, and the item it runs as. */
export interface DeliveryEvent {
	/** The element, parsed. */
	body: unknown;
	/** The element exactly as the request spells it; undefined when the body is not JSON read back to the same elements. */
	rawBody: Buffer | undefined;
}

export type EventsFound = { events: DeliveryEvent[] } | { refused: 'notAnArray' | 'tooMany'; reason: string };

/** The steps of an Events Path: it starts at `body` (`body` alone: the body is the array). Throws InvalidConfigurationError. */
export function eventsPathSteps(path: string): readonly PathStep[] {
	const steps = parseFieldPath(path);
	if (steps[0] !== 'body') {
		throw new InvalidConfigurationError(
			`The Events Path ${JSON.stringify(path)} must start with "body" (the request body): "body" when the body is the array, "body.events" when the array is its member "events".`,
		);
	}
	return steps;
}

/**
 * Why the Key Source cannot tell one event of a delivery from another, or undefined when it reads
 * each event: a header, a Custom Value, or a field outside the body is the same for every event of
 * the delivery, so all but the first would be taken for copies and never run.
 */
export function eventKeyRefusal(key: KeyConfig): string | undefined {
	const sameForAll = (source: string) =>
		`Key Source ${source} gives every event of one delivery the same key, so all but the first would be taken for copies and never run. With an Events Path, choose a key read from each event (Auto, a provider preset that reads the body, Field under "body", or Body Hash).`;
	switch (key.strategy) {
		case 'header':
			return sameForAll('"Header"');
		case 'custom':
			return sameForAll('"Custom Value"');
		case 'preset':
			return isProviderPreset(key.preset) && PROVIDER_PRESETS[key.preset].from === 'header'
				? sameForAll(`"${key.preset}" (its id is a header)`)
				: undefined;
		case 'field':
			return parseFieldPath(key.fieldPath as string)[0] === 'body' ? undefined : sameForAll(`"Field" outside "body"`);
		default:
			return undefined;
	}
}

/** The events at `steps` of the parsed body, each with its exact bytes when the raw body has them. */
export function eventsOf(body: unknown, rawBody: Buffer, steps: readonly PathStep[], path: string): EventsFound {
	const found = valueAtPath({ body }, steps);
	if (!Array.isArray(found)) {
		// The kind only: the body itself is the sender's data, never quoted back.
		const kind = found === undefined ? 'nothing' : found === null ? 'null' : typeof found === 'object' ? 'an object' : `a ${typeof found}`;
		return {
			refused: 'notAnArray',
			reason: `The Events Path ${JSON.stringify(path)} leads to ${kind} in this delivery, not to an array of events. Nothing was reserved.`,
		};
	}
	if (found.length > MAX_EVENTS_PER_DELIVERY) {
		return {
			refused: 'tooMany',
			reason: `The delivery carries ${found.length} events; at most ${MAX_EVENTS_PER_DELIVERY} are accepted in one delivery. Nothing was reserved: send smaller batches.`,
		};
	}
	const raw = arrayElementsAt(rawBody, steps.slice(1));
	const exact = raw?.length === found.length ? raw : undefined;
	return {
		events: found.map((event, index) => ({ body: event as unknown, rawBody: exact ? Buffer.from(exact[index].text, 'utf8') : undefined })),
	};
}
