/**
 * The ports fetch() refuses to connect to, whatever listens there: the Fetch standard's "bad
 * ports" (https://fetch.spec.whatwg.org/#port-blocking, the table under "A port is a bad port";
 * 4190 and 6679 were added by whatwg/fetch commit 4c3750d). Node's fetch (undici) follows it: on
 * Node 20.20 a fetch to each of these ports, and to no other port from 1 to 65535, fails with
 * "bad port" (fetch-bad-ports.test.ts checks the list against the running Node's fetch).
 */
export const FETCH_BAD_PORTS: ReadonlySet<number> = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513,
  514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679,
  6697, 10080,
]);

/** True when fetch() cannot reach `port`: neither the CLI client nor a browser (the dashboard) could talk to a service there. */
export function isFetchBadPort(port: number): boolean {
  return FETCH_BAD_PORTS.has(port);
}
