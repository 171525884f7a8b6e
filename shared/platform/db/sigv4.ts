import { createHash, createHmac } from 'node:crypto';

/** AWS credentials as the signer needs them. */
export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  /** When temporary credentials stop working (providers that know it). */
  expiration?: Date;
}

export interface SignInput {
  /** Host header value (`host` or `host:port` when the port is not the scheme's default). */
  host: string;
  /** Request path, `/` for DynamoDB. */
  path: string;
  /** Headers besides host, x-amz-date, x-amz-content-sha256 and x-amz-security-token, which are added here. */
  headers: Record<string, string>;
  body: string;
  region: string;
  service: string;
  credentials: Credentials;
  /** Signing time (the caller applies any clock-skew correction). */
  date: Date;
}

const sha256 = (data: string) => createHash('sha256').update(data, 'utf8').digest('hex');
const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();

/** Derived signing keys by secret, day, region and service: one HMAC chain a day instead of four per request. */
const signingKeys = new Map<string, Buffer>();

function signingKey(secret: string, day: string, region: string, service: string): Buffer {
  const id = `${sha256(secret)}/${day}/${region}/${service}`;
  let key = signingKeys.get(id);
  if (!key) {
    key = hmac(hmac(hmac(hmac(`AWS4${secret}`, day), region), service), 'aws4_request');
    if (signingKeys.size > 20) signingKeys.clear();
    signingKeys.set(id, key);
  }
  return key;
}

/** `20261124T215000Z` */
export const amzDate = (d: Date) => d.toISOString().replace(/[-:]|\.\d{3}/g, '');

/** Each path segment URI-encoded as Signature Version 4 asks (RFC 3986 unreserved characters kept). */
function canonicalPath(path: string): string {
  const encode = (s: string) =>
    encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return (
    path
      .split('/')
      .map((seg) => encode(encode(decodeURIComponent(seg))))
      .join('/') || '/'
  );
}

/**
 * Signs a request with AWS Signature Version 4 (header form, signed payload), as the AWS SDK does for
 * the JSON protocols: every header given is signed. Returns the headers to send (the given ones plus
 * host, x-amz-date, x-amz-content-sha256, x-amz-security-token and authorization).
 */
export function signRequest(input: SignInput): Record<string, string> {
  const stamp = amzDate(input.date);
  const day = stamp.slice(0, 8);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(input.headers)) headers[k.toLowerCase()] = v;
  const payloadHash = sha256(input.body);
  headers.host = input.host;
  headers['x-amz-date'] = stamp;
  // Optional for DynamoDB; the AWS SDK sends and signs it too.
  headers['x-amz-content-sha256'] = payloadHash;
  if (input.credentials.sessionToken) headers['x-amz-security-token'] = input.credentials.sessionToken;
  const names = Object.keys(headers).sort();
  const canonicalHeaders = names.map((n) => `${n}:${headers[n].trim().replace(/\s+/g, ' ')}\n`).join('');
  const signedHeaders = names.join(';');
  const canonicalRequest = [
    'POST',
    canonicalPath(input.path),
    '',
    canonicalHeaders,
    signedHeaders,
    payloadHash,
  ].join('\n');
  const scope = `${day}/${input.region}/${input.service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', stamp, scope, sha256(canonicalRequest)].join('\n');
  const signature = createHmac(
    'sha256',
    signingKey(input.credentials.secretAccessKey, day, input.region, input.service),
  )
    .update(stringToSign, 'utf8')
    .digest('hex');
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${input.credentials.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
  return headers;
}
