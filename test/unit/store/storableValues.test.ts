import { REDACTED, redactedErrorText } from '../../../lib/evidence/redactedText';
import { MAX_ERROR_MESSAGE_LENGTH, storableErrorMessage } from '../../../lib/store/storableValues';

// What a failure's message becomes before it is written to the key table (Mark Failed, Settle, the end of an
// execution): the table keeps it for the retention period and pages show it.
describe('storableErrorMessage', () => {
	it('stores no credential the message quotes: a Stop and Error message built from the trigger item', () => {
		const item = { headers: { authorization: 'Basic c3RyaXBlOnNlY3JldA==', 'content-type': 'application/json' }, body: { id: 'evt_1' } };
		const { text } = storableErrorMessage(`Unsupported event: ${JSON.stringify(item)}`);
		expect(text).not.toContain('c3RyaXBlOnNlY3JldA');
		expect(text).toBe(
			`Unsupported event: {"headers":{"authorization":"${REDACTED}","content-type":"application/json"},"body":{"id":"evt_1"}}`,
		);
	});

	it('redacts a credential after its scheme and in a URL it quotes', () => {
		expect(storableErrorMessage('401 calling https://api.example.org/x?api_key=s3cr3t with Bearer abcdef123').text).toBe(
			`401 calling https://api.example.org/x?api_key=${REDACTED} with Bearer ${REDACTED}`,
		);
	});

	it('repairs NUL and lone surrogates, and cuts at the limit, never half a surrogate pair', () => {
		const repaired = storableErrorMessage('a\u0000b\uD800c');
		expect(repaired.text).toBe('a\uFFFDb\uFFFDc');
		expect(repaired.warnings).toHaveLength(1);
		const long = storableErrorMessage(`${'x'.repeat(MAX_ERROR_MESSAGE_LENGTH - 1)}😀`);
		expect(long.text).toBe('x'.repeat(MAX_ERROR_MESSAGE_LENGTH - 1));
	});

	// Each pattern runs in time linear in the message: an unclosed array of quoted values with white space between them
	// would take a pattern with two optional white-space runs per value exponentially long (40 values: hours).
	it('redacts a message made to make a pattern backtrack (an unclosed array, a megabyte of quotes) at once', () => {
		const unclosed = `{"api_key":[${'"a"        '.repeat(40)}x`;
		expect(redactedErrorText(unclosed)).toBe(unclosed);
		// A quote never closed: the rest of the message is the value (here cut off whole: it is one word past 64 KB).
		expect(redactedErrorText(`token="${'a'.repeat(1_000_000)}`).includes('a'.repeat(100))).toBe(false);
		expect(redactedErrorText(`token="${'a'.repeat(1_000)}`)).toBe(`token=${REDACTED}`);
	});
});
