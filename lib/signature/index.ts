export { verifySignature } from './verify';
export { FAILURE_DESCRIPTIONS } from './reasons';
export { resolveSecrets, hasOuterWhitespace, decodeStandardWebhooksSecret, LEGACY_LIST_MESSAGE, type ConfiguredSecrets } from './secrets';
export { SignatureError, SignatureConfigError } from './errors';
export {
	DEFAULT_TOLERANCE_SECONDS,
	SIGNATURE_SCHEMES,
	type GenericHmacOptions,
	type HeaderBag,
	type HmacAlgorithm,
	type SignatureEncoding,
	type SignatureFailureReason,
	type SignatureScheme,
	type VerifySignatureInput,
	type VerifySignatureResult,
} from './types';
