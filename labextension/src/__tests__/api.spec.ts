/**
 * The REST client: the URLs it asks for, and how the server's refusals and an unreachable server
 * become `ServerConnection` errors carrying the message the panel and the tab show.
 */

import { ServerConnection } from '@jupyterlab/services';

import { ago, apiUrl, attachmentName, fetchTimeline, get, listingPages, nextOffset } from '../api';

const BASE = 'http://127.0.0.1:8888/lab-base/';

/** The URL asked for, without the time JupyterLab appends to requests made with `cache: 'no-store'`. */
function asked(request: unknown): string {
  return (request as Request).url.replace(/[?&]\d{12,}$/, '');
}

/** Settings whose fetch answers every request with `answer` (or throws it), recording the URLs. */
function serverAnswering(answer: Response | Error): { settings: ServerConnection.ISettings; urls: string[] } {
  const urls: string[] = [];
  const fetch = async (request: RequestInfo): Promise<Response> => {
    urls.push(asked(request));
    if (answer instanceof Error) {
      throw answer;
    }
    return answer;
  };
  const settings = ServerConnection.makeSettings({ baseUrl: BASE, fetch, Request, Headers });
  return { settings, urls };
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
}

describe('apiUrl', () => {
  it('joins the base URL, the API and the path, and encodes the parameters', () => {
    const url = apiUrl(BASE, `${encodeURIComponent('a/b c')}/timeline`, { file: 'my dir/x&y.sqlite', known: 7 });
    expect(url).toBe(
      'http://127.0.0.1:8888/lab-base/nbagent/api/sessions/a%2Fb%20c/timeline?file=my%20dir%2Fx%26y.sqlite&known=7'
    );
  });

  it('asks for the folder listing at the root of the API', () => {
    // URLExt writes an empty value as a bare name, which the server reads as ''
    expect(apiUrl(BASE, '', { path: '' })).toBe('http://127.0.0.1:8888/lab-base/nbagent/api/sessions?path');
  });
});

describe('get', () => {
  it('answers the response of the URL it built', async () => {
    const { settings, urls } = serverAnswering(json(200, []));
    const response = await get('', { path: 'notes' }, settings);
    expect(await response.json()).toEqual([]);
    expect(urls).toEqual(['http://127.0.0.1:8888/lab-base/nbagent/api/sessions?path=notes']);
  });

  it("turns a refusal into a ResponseError with the server's message", async () => {
    const message = "'x.sqlite' is not an nbagent session file";
    const { settings } = serverAnswering(json(422, { message, reason: null }));
    const error = await get('', { file: 'x.sqlite' }, settings).catch(e => e);
    expect(error).toBeInstanceOf(ServerConnection.ResponseError);
    expect(error.message).toBe(message);
    expect(error.response.status).toBe(422);
  });

  it('keeps the status line when the refusal is not JSON', async () => {
    const { settings } = serverAnswering(new Response('<html>gateway</html>', { status: 502, statusText: 'Bad Gateway' }));
    const debug = jest.spyOn(console, 'debug').mockImplementation(() => undefined); // JupyterLab logs the parse error
    const error = await get('', { path: '' }, settings).catch(e => e);
    debug.mockRestore();
    expect(error).toBeInstanceOf(ServerConnection.ResponseError);
    expect(error.message).toBe('Invalid response: 502 Bad Gateway');
  });

  it('turns an unreachable server into a NetworkError naming the URL', async () => {
    const { settings } = serverAnswering(new TypeError('Failed to fetch'));
    const error = await get('', { path: 'notes' }, settings).catch(e => e);
    expect(error).toBeInstanceOf(ServerConnection.NetworkError);
    expect(error.message).toBe(
      'cannot reach the Jupyter server at http://127.0.0.1:8888/lab-base/nbagent/api/sessions?path=notes: Failed to fetch'
    );
  });
});

describe('fetchTimeline', () => {
  it('answers null when the server says the bundle it has is current (204)', async () => {
    const fetch = jest.fn(async () => new Response(null, { status: 204 }));
    const settings = ServerConnection.makeSettings({ baseUrl: BASE, fetch, Request, Headers });
    const spy = jest.spyOn(ServerConnection, 'makeSettings').mockReturnValue(settings);
    try {
      expect(await fetchTimeline('s.sqlite', 'abc', 12)).toBeNull();
      expect(asked((fetch.mock.calls[0] as unknown[])[0])).toBe(
        'http://127.0.0.1:8888/lab-base/nbagent/api/sessions/abc/timeline?file=s.sqlite&known=12'
      );
    } finally {
      spy.mockRestore();
    }
  });
});

describe('ago', () => {
  const now = Date.UTC(2026, 0, 10, 12, 0, 0);
  it.each([
    [null, 'no activity'],
    [now - 20_000, 'just now'],
    [now - 3 * 60_000, '3 min ago'],
    [now - 2 * 3_600_000, '2 h ago']
  ])('says how long ago %p was', (time, said) => {
    expect(ago(time, now)).toBe(said);
  });

  it('gives a date past a day', () => {
    const time = now - 3 * 86_400_000;
    expect(ago(time, now)).toBe(new Date(time).toLocaleDateString());
  });
});

describe('attachmentName', () => {
  it("reads the UTF-8 filename* before the ASCII fallback, which can hold no injected parameter", () => {
    expect(attachmentName(`attachment; filename="__-ab12.md"; filename*=UTF-8''%E5%88%86%E6%9E%90-ab12.md`)).toBe(
      '分析-ab12.md'
    );
    expect(
      attachmentName(`attachment; filename="a__ x_-1.md"; filename*=UTF-8''a%22%3B%20x%3D%22-1.md`)
    ).toBe('a"; x="-1.md');
    expect(attachmentName('attachment; filename="plain.md"')).toBe('plain.md');
    expect(attachmentName(`attachment; filename="fallback.md"; filename*=UTF-8''%E5%88`)).toBe('fallback.md');
    expect(attachmentName('')).toBeNull();
  });
});

describe('listingPages', () => {
  it('follows the Link rel="next" pages and keeps a session listed twice once', async () => {
    const urls: string[] = [];
    const pages: Record<string, [unknown[], string | null]> = {
      '0': [[{ file: 'a.nbagent.sqlite', id: 's1' }, { file: 'a.nbagent.sqlite', id: 's2' }], '2'],
      '2': [[{ file: 'a.nbagent.sqlite', id: 's2' }, { file: 'b.nbagent.sqlite', error: 'empty' }], null]
    };
    const fetch = async (request: RequestInfo): Promise<Response> => {
      const url = asked(request);
      urls.push(url);
      const offset = new URL(url).searchParams.get('offset') ?? '0';
      const [rows, next] = pages[offset];
      const headers: Record<string, string> = { 'Content-Type': 'application/json' };
      if (next !== null) {
        headers.Link = `</lab-base/nbagent/api/sessions?path=d&offset=${next}&limit=2>; rel="next"`;
      }
      return new Response(JSON.stringify(rows), { status: 200, headers });
    };
    const settings = ServerConnection.makeSettings({ baseUrl: BASE, fetch, Request, Headers });
    const rows = await listingPages({ path: 'd' }, settings);
    expect(rows).toEqual([
      { file: 'a.nbagent.sqlite', id: 's1' },
      { file: 'a.nbagent.sqlite', id: 's2' },
      { file: 'b.nbagent.sqlite', error: 'empty' }
    ]);
    expect(urls).toEqual([`${BASE}nbagent/api/sessions?path=d`, `${BASE}nbagent/api/sessions?path=d&offset=2`]);
  });

  it('reads the next offset from a Link header, and null without one', () => {
    expect(nextOffset('</x/nbagent/api/sessions?path=&offset=200&limit=200>; rel="next"')).toBe(200);
    expect(nextOffset(null)).toBeNull();
    expect(nextOffset('</x?offset=abc>; rel="next"')).toBeNull();
    expect(nextOffset('</x?offset=5>; rel="prev"')).toBeNull();
  });
});
