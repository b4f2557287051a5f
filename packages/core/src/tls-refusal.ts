/**
 * Node's TLS errors that mean "these certificates will not do" rather than "the server is away":
 * the peer's certificate failed verification here, or the server refused ours. Adapters report
 * them as `LOCK_FORBIDDEN` at once; retrying with the same certificates cannot succeed.
 */

// Verification of the server's certificate failed on our side (OpenSSL's X509 verify results).
const LOCAL_VERIFY = new Map<string, string>([
  ['CERT_HAS_EXPIRED', "the server's certificate has expired"],
  ['CERT_NOT_YET_VALID', "the server's certificate is not valid yet"],
  ['DEPTH_ZERO_SELF_SIGNED_CERT', "the server's certificate is self-signed and not trusted"],
  ['SELF_SIGNED_CERT_IN_CHAIN', "the server's certificate chain ends in an untrusted CA"],
  ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', "the server's certificate is not signed by a trusted CA"],
  ['UNABLE_TO_GET_ISSUER_CERT_LOCALLY', "the server's certificate is not signed by a trusted CA"],
  ['CERT_SIGNATURE_FAILURE', "the server's certificate signature is invalid"],
  ['CERT_REVOKED', "the server's certificate is revoked"],
  ['ERR_TLS_CERT_ALTNAME_INVALID', "the server's certificate does not name the host connected to"],
]);

/**
 * What is wrong with the certificates, in words that carry no secret, when `error` is a TLS
 * certificate failure; `undefined` for anything else (a refused connection, a timeout).
 */
export function tlsCertificateProblem(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return undefined;
  const local = LOCAL_VERIFY.get(code);
  if (local !== undefined) return local;
  // The server's alert about OUR certificate: ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE,
  // ERR_SSL_TLSV1_ALERT_UNKNOWN_CA, ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED, …_CERTIFICATE_EXPIRED.
  const alert = /^ERR_SSL_(?:SSLV3|TLSV1|TLSV13)_ALERT_([A-Z_]+)$/.exec(code)?.[1];
  if (alert === undefined || !/CERTIFICATE|UNKNOWN_CA|ACCESS_DENIED/.test(alert)) return undefined;
  return `the server refused our client certificate (TLS alert ${alert.toLowerCase().replaceAll('_', ' ')})`;
}
