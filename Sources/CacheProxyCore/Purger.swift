// SPDX-License-Identifier: Apache-2.0

#if Proxy
import HTTPCaching
import HTTPTypes
import Logging

/// `PURGE`, on the main listener and the admin listener alike, with the purge token:
/// - `PURGE /path` removes what is stored for the target's URL (every variant, `GET` and `HEAD`);
/// - `PURGE /prefix*` (a target ending in `*`, as nginx's cache purge module takes it) removes
///   every response whose URL starts with the target's before the `*`: a ban, as Varnish's
///   `ban req.url ~ ^/prefix`, without the regular expression. (A `BAN` method is not possible:
///   the HTTP/1 parser refuses methods it does not know.)
/// - with one of the tag fields (`Surrogate-Key: a b`), every response tagged with one of its
///   tags instead.
///
/// With a shared tier, each reaches every instance; a tag purge or a ban whose message could not
/// reach them answers 503 (what this instance held is gone; the operator sends it again).
struct Purger: Sendable {
    let cache: ResponseCache
    /// The bearer token a `PURGE` must carry; nil refuses `PURGE`.
    let token: [UInt8]?
    /// The fields a purge by tag names its tags in (the proxy's tag fields).
    let tagFields: [HTTPField.Name]
    let logger: Logger

    static let method = HTTPRequest.Method("PURGE")!

    /// The answer to a `PURGE` of `target` whose fields are `fields`.
    func purge(_ target: HTTPRequest, fields: HTTPFields) async -> ProxyHandler.Answer {
        guard let token else {
            var refusal = ProxyHandler.refusal(
                .methodNotAllowed,
                "PURGE is not enabled (cache-proxy --purge-token-file)\n"
            )
            refusal.0.headerFields[.allow] = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
            return refusal
        }
        guard let authorization = fields[.authorization], Self.isBearer(authorization, token) else {
            var refusal = ProxyHandler.refusal(
                .unauthorized,
                "PURGE needs the purge token: Authorization: Bearer TOKEN\n"
            )
            refusal.0.headerFields[.wwwAuthenticate] = "Bearer"
            return refusal
        }
        let tags = SurrogateKeys.tags(in: fields, names: tagFields)
        if !tags.isEmpty { return await purge(tags: tags) }
        if let path = target.path, path.hasSuffix("*") {
            var prefix = target
            prefix.path = String(path.dropLast())
            return await ban(prefix)
        }
        var get = target
        get.method = .get
        do {
            try await cache.removeCachedResponse(for: get)
        } catch {
            logger.warning("a purge failed", metadata: ["path": "\(target.path ?? "")", "error": "\(error)"])
            return ProxyHandler.refusal(.serviceUnavailable, "the purge failed: \(error.message)\n")
        }
        logger.info("purged", metadata: ["path": "\(target.path ?? "")"])
        return ProxyHandler.refusal(.ok, "purged\n", status: .purge)
    }

    /// Removes every response whose URL starts with `target`'s; the answer counts the URLs
    /// removed.
    private func ban(_ target: HTTPRequest) async -> ProxyHandler.Answer {
        let path = target.path ?? ""
        do {
            let removed = try await cache.removeCachedResponses(withURLPrefix: target)
            logger.info("banned", metadata: ["prefix": "\(path)", "removed": "\(removed)"])
            return ProxyHandler.refusal(.ok, "banned \(removed)\n", status: .purge)
        } catch {
            logger.warning("a ban failed", metadata: ["prefix": "\(path)", "error": "\(error)"])
            let cause = error.underlying.map { ": \($0)" } ?? ""
            return ProxyHandler.refusal(.serviceUnavailable, "the ban failed: \(error.message)\(cause)\n")
        }
    }

    /// Removes every response tagged with one of `tags`; the answer counts the URLs removed.
    private func purge(tags: [String]) async -> ProxyHandler.Answer {
        var removed = 0
        for tag in tags {
            do {
                let (here, unreached) = try await cache.invalidateEverywhere(tag: tag)
                removed += here
                if let unreached {
                    logger.warning(
                        "a purge by tag did not reach the other instances",
                        metadata: ["tag": "\(tag)", "error": "\(unreached)"]
                    )
                    return ProxyHandler.refusal(
                        .serviceUnavailable,
                        "the purge of tag '\(tag)' removed \(removed) responses here but did not reach the other "
                            + "instances: \(unreached)\n"
                    )
                }
            } catch {
                logger.warning("a purge by tag failed", metadata: ["tag": "\(tag)", "error": "\(error)"])
                return ProxyHandler.refusal(
                    .serviceUnavailable,
                    "the purge of tag '\(tag)' failed after \(removed) responses: \(error.message)\n"
                )
            }
        }
        logger.info("purged by tag", metadata: ["tags": "\(tags)", "removed": "\(removed)"])
        return ProxyHandler.refusal(.ok, "purged \(removed)\n", status: .purge)
    }

    /// Whether `authorization` is `Bearer ` and `token`, compared in time that does not depend on
    /// where they differ.
    static func isBearer(_ authorization: String, _ token: [UInt8]) -> Bool {
        let value = Array(authorization.utf8)
        let scheme = Array("bearer ".utf8)
        guard value.count == scheme.count + token.count,
            zip(value, scheme).allSatisfy({ $0 | 0x20 == $1 | 0x20 })
        else { return false }
        var difference: UInt8 = 0
        for (given, expected) in zip(value.dropFirst(scheme.count), token) { difference |= given ^ expected }
        return difference == 0
    }
}
#endif
