import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignatureV4 } from '@smithy/signature-v4';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awsCredentials, regionalEndpoint, setFallbackCredentials } from '../../shared/platform/db/client';
import { DocumentClient, DynamoDBError, errorName } from '../../shared/platform/db/document';
import { backoffMs, httpStoreCall } from '../../shared/platform/db/http-call';
import { signRequest } from '../../shared/platform/db/sigv4';

/** The hash class the AWS SDK's signer takes (sha256, HMAC with a secret), on node:crypto. */
class Sha256 {
  private readonly h;
  constructor(secret?: unknown) {
    this.h = secret ? createHmac('sha256', secret as string | Uint8Array) : createHash('sha256');
  }
  update(data: unknown) {
    this.h.update(data as string | Uint8Array);
  }
  async digest() {
    return new Uint8Array(this.h.digest());
  }
}

describe('Signature Version 4 (the same signature as the AWS SDK signer)', () => {
  const cases = [
    {
      region: 'us-east-1',
      host: 'dynamodb.us-east-1.amazonaws.com',
      sessionToken: 'FwoGZXIvYXdzE//token+/=',
    },
    { region: 'eu-central-1', host: 'dynamodb.eu-central-1.amazonaws.com', sessionToken: undefined },
    { region: 'local', host: '127.0.0.1:8000', sessionToken: undefined },
  ];
  for (const c of cases)
    it(`signs a DynamoDB call in ${c.region}${c.sessionToken ? ' with a session token' : ''}`, async () => {
      const credentials = {
        accessKeyId: 'AKIDEXAMPLE',
        secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
        sessionToken: c.sessionToken,
      };
      const date = new Date('2026-11-24T21:50:07.123Z');
      const body = JSON.stringify({ TableName: 't', Key: { pk: { S: 'ORG#1 ünï' }, sk: { S: 'A  b' } } });
      const headers = {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': 'DynamoDB_20120810.GetItem',
      };
      const ours = signRequest({
        host: c.host,
        path: '/',
        headers,
        body,
        region: c.region,
        service: 'dynamodb',
        credentials,
        date,
      });
      const sdk = new SignatureV4({ credentials, region: c.region, service: 'dynamodb', sha256: Sha256 });
      const signed = await sdk.sign(
        {
          method: 'POST',
          protocol: 'https:',
          hostname: c.host,
          path: '/',
          query: {},
          headers: { ...headers, host: c.host },
          body,
        } as never,
        { signingDate: date },
      );
      expect(ours.authorization).toBe(
        (signed as unknown as { headers: Record<string, string> }).headers.authorization,
      );
      expect(ours['x-amz-date']).toBe('20261124T215007Z');
      if (c.sessionToken) expect(ours['x-amz-security-token']).toBe(c.sessionToken);
    });
});

describe('endpoints and credentials', () => {
  it('uses the regional endpoint of each partition, FIPS and dual-stack as the SDK reads them', () => {
    expect(regionalEndpoint('us-east-1', {})).toBe('https://dynamodb.us-east-1.amazonaws.com');
    expect(regionalEndpoint('cn-north-1', {})).toBe('https://dynamodb.cn-north-1.amazonaws.com.cn');
    expect(regionalEndpoint('us-gov-west-1', {})).toBe('https://dynamodb.us-gov-west-1.amazonaws.com');
    expect(regionalEndpoint('us-iso-east-1', {})).toBe('https://dynamodb.us-iso-east-1.c2s.ic.gov');
    expect(regionalEndpoint('us-east-1', { AWS_USE_FIPS_ENDPOINT: 'true' })).toBe(
      'https://dynamodb-fips.us-east-1.amazonaws.com',
    );
    expect(regionalEndpoint('eu-west-1', { AWS_USE_DUALSTACK_ENDPOINT: 'true' })).toBe(
      'https://dynamodb.eu-west-1.api.aws',
    );
    expect(() => regionalEndpoint('evil.com/x', {})).toThrow(/Not an AWS region/);
  });

  it("reads Lambda's credentials from the environment on every call", async () => {
    const saved = { ...process.env };
    try {
      process.env.AWS_ACCESS_KEY_ID = 'A1';
      process.env.AWS_SECRET_ACCESS_KEY = 'S1';
      process.env.AWS_SESSION_TOKEN = 'T1';
      const creds = awsCredentials();
      expect(await creds()).toEqual({ accessKeyId: 'A1', secretAccessKey: 'S1', sessionToken: 'T1' });
      process.env.AWS_ACCESS_KEY_ID = 'A2';
      delete process.env.AWS_SESSION_TOKEN;
      expect(await creds()).toEqual({ accessKeyId: 'A2', secretAccessKey: 'S1', sessionToken: undefined });
      delete process.env.AWS_ACCESS_KEY_ID;
      await expect(creds()).rejects.toThrow(/No AWS credentials/);
      setFallbackCredentials(async () => ({ accessKeyId: 'P', secretAccessKey: 'Q' }));
      expect(await creds()).toEqual({ accessKeyId: 'P', secretAccessKey: 'Q' });
    } finally {
      setFallbackCredentials(undefined);
      process.env = saved;
    }
  });

  it('names errors as the SDK does', () => {
    expect(errorName('com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException')).toBe(
      'ConditionalCheckFailedException',
    );
    expect(errorName('com.amazon.coral.validate#ValidationException')).toBe('ValidationException');
    expect(errorName('ThrottlingException:http://internal')).toBe('ThrottlingException');
    expect(errorName('')).toBe('UnknownError');
  });

  it('backs off with full jitter, longer for throttling, never over 20 s', () => {
    expect(backoffMs(1, false, () => 0.999)).toBe(199);
    expect(backoffMs(1, true, () => 0.999)).toBe(999);
    expect(backoffMs(2, false, () => 0.5)).toBe(200);
    expect(backoffMs(30, true, () => 0.999)).toBe(19_980);
    expect(backoffMs(3, false, () => 0)).toBe(0);
  });
});

/** A scripted DynamoDB endpoint: each request gets the next reply (or the last one again). */
type Script = (req: IncomingMessage, body: string, res: ServerResponse) => void;
let server: Server;
let endpoint: string;
let script: Script[] = [];
let seen: { headers: IncomingMessage['headers']; body: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      seen.push({ headers: req.headers, body });
      const step = script.length > 1 ? script.shift()! : script[0];
      step(req, body, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}): Script =>
  (_q, _b, res) => {
    res.writeHead(status, {
      'content-type': 'application/x-amz-json-1.0',
      'x-amzn-requestid': 'REQ1',
      ...headers,
    });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  };
const waits: number[] = [];
const client = (maxAttempts = 3, extra: Partial<Parameters<typeof httpStoreCall>[0]> = {}) =>
  new DocumentClient(
    httpStoreCall({
      endpoint,
      region: 'us-east-1',
      credentials: async () => ({ accessKeyId: 'AK', secretAccessKey: 'SK', sessionToken: 'TOK' }),
      maxAttempts,
      sleep: async (ms) => {
        waits.push(ms);
      },
      ...extra,
    }),
  );
const start = (...steps: Script[]) => {
  script = steps;
  seen = [];
  waits.length = 0;
};

describe('HTTP transport', () => {
  it('sends a signed JSON-protocol request and returns the document output with its metadata', async () => {
    start(
      json(200, {
        Item: { pk: { S: 'a' }, n: { N: '42' }, b: { B: Buffer.from([1, 2]).toString('base64') } },
      }),
    );
    const out = await client().send('GetItem', { TableName: 't', Key: { pk: 'a', sk: 'b' } });
    expect(out.Item).toEqual({ pk: 'a', n: 42, b: new Uint8Array([1, 2]) });
    expect(out.$metadata).toMatchObject({ httpStatusCode: 200, requestId: 'REQ1', attempts: 1 });
    const h = seen[0].headers;
    expect(h['x-amz-target']).toBe('DynamoDB_20120810.GetItem');
    expect(h['content-type']).toBe('application/x-amz-json-1.0');
    expect(h['x-amz-security-token']).toBe('TOK');
    expect(h.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AK\/\d{8}\/us-east-1\/dynamodb\/aws4_request, SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token;x-amz-target, Signature=[0-9a-f]{64}$/,
    );
    expect(JSON.parse(seen[0].body)).toEqual({ TableName: 't', Key: { pk: { S: 'a' }, sk: { S: 'b' } } });
  });

  it('retries 5xx and throttling answers, then succeeds; the attempts are counted', async () => {
    start(
      json(500, { __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: 'boom' }),
      json(400, {
        __type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
        message: 'slow down',
      }),
      json(200, {}),
    );
    const out = await client().send('PutItem', { TableName: 't', Item: { pk: 'a', sk: 'b' } });
    expect(out.$metadata.attempts).toBe(3);
    expect(seen).toHaveLength(3);
    expect(waits[0]).toBeLessThan(200); // 100 ms × 2¹, full jitter
    expect(waits[1]).toBeLessThan(2000); // throttling: 500 ms × 2²
  });

  it('gives up after maxAttempts with the last error, and never retries a client error', async () => {
    start(json(503, { __type: 'ServiceUnavailable', message: 'down' }));
    const e = await client(2)
      .send('GetItem', { TableName: 't', Key: { pk: 'a' } })
      .catch((x) => x);
    expect(e).toBeInstanceOf(DynamoDBError);
    expect(e).toMatchObject({ name: 'ServiceUnavailable', message: 'down', $fault: 'server' });
    expect(e.$metadata).toMatchObject({ httpStatusCode: 503, attempts: 2 });
    start(
      json(400, {
        __type: 'com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException',
        message: 'The conditional request failed',
        Item: { pk: { S: 'a' }, v: { N: '3' } },
      }),
    );
    const c = await client()
      .send('PutItem', { TableName: 't', Item: { pk: 'a' } })
      .catch((x) => x);
    expect(seen).toHaveLength(1);
    expect(c).toMatchObject({
      name: 'ConditionalCheckFailedException',
      $fault: 'client',
      Item: { pk: { S: 'a' }, v: { N: '3' } },
    });
  });

  it('corrects its clock when the service says the signature is from another time', async () => {
    const serverNow = new Date(Date.now() + 3_600_000);
    start(
      json(
        400,
        { __type: 'com.amazon.coral.service#InvalidSignatureException', message: 'Signature expired' },
        { date: serverNow.toUTCString() },
      ),
      json(200, {}),
    );
    await client().send('DeleteItem', { TableName: 't', Key: { pk: 'a' } });
    const stamp = (i: number) => String(seen[i].headers['x-amz-date']);
    const toMs = (s: string) =>
      Date.parse(
        `${s.slice(0, 4)}-${s.slice(4, 6)}-${s.slice(6, 8)}T${s.slice(9, 11)}:${s.slice(11, 13)}:${s.slice(13, 15)}Z`,
      );
    expect(Math.abs(toMs(stamp(1)) - serverNow.getTime())).toBeLessThan(5_000);
    expect(Math.abs(toMs(stamp(0)) - Date.now())).toBeLessThan(5_000);
  });

  it('retries a dropped connection and a silent server, and reports a timeout after the last attempt', async () => {
    start((_q, _b, res) => res.socket?.destroy(), json(200, { Attributes: { n: { N: '1' } } }));
    const out = await client().send('UpdateItem', {
      TableName: 't',
      Key: { pk: 'a' },
      UpdateExpression: 'ADD n :one',
      ExpressionAttributeValues: { ':one': 1 },
    });
    expect(out.Attributes).toEqual({ n: 1 });
    expect(out.$metadata.attempts).toBe(2);
    start(() => {}); // never answers
    const e = await client(2, { idleTimeoutMs: 100 })
      .send('GetItem', { TableName: 't', Key: { pk: 'a' } })
      .catch((x) => x);
    expect(e).toMatchObject({ name: 'TimeoutError', code: 'ETIMEDOUT' });
    expect(e.$metadata.attempts).toBe(2);
    expect(seen).toHaveLength(2);
  });

  it('reports an answer that is not JSON without crashing', async () => {
    start(json(502, '<html>bad gateway</html>'));
    const e = await client(1)
      .send('GetItem', { TableName: 't', Key: { pk: 'a' } })
      .catch((x) => x);
    expect(e).toMatchObject({ name: 'InternalServerError', $fault: 'server' });
    expect(e.message).toContain('bad gateway');
    start(json(200, 'not json'));
    await expect(client(1).send('GetItem', { TableName: 't', Key: { pk: 'a' } })).rejects.toThrow(/not JSON/);
  });
});
