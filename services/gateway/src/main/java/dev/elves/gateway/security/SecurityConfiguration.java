package dev.elves.gateway.security;

import java.nio.charset.StandardCharsets;
import java.util.List;

import javax.crypto.spec.SecretKeySpec;

import org.springframework.boot.security.autoconfigure.actuate.web.servlet.EndpointRequest;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpMethod;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.http.SessionCreationPolicy;
import org.springframework.security.core.GrantedAuthority;
import org.springframework.security.core.authority.SimpleGrantedAuthority;
import org.springframework.security.oauth2.core.DelegatingOAuth2TokenValidator;
import org.springframework.security.oauth2.jose.jws.MacAlgorithm;
import org.springframework.security.oauth2.jwt.JwtDecoder;
import org.springframework.security.oauth2.jwt.JwtValidators;
import org.springframework.security.oauth2.jwt.NimbusJwtDecoder;
import org.springframework.security.oauth2.server.resource.authentication.JwtAuthenticationConverter;
import org.springframework.security.web.SecurityFilterChain;

/**
 * Every API call needs an HS256 bearer token whose {@code sub} names the user; listing all
 * users also needs {@code "admin": true} ({@link TokenRules} lists what else a token must say).
 * Health and metrics (management port) and the OpenAPI document are open.
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(JwtProperties.class)
@Import(JsonSecurityErrors.class)
public class SecurityConfiguration {

	/** The gateway's OpenAPI document, readable without a token. */
	public static final String OPENAPI_DOCUMENT = "/openapi.yaml";

	@Bean
	SecurityFilterChain apiSecurity(HttpSecurity http, JsonSecurityErrors errors) throws Exception {
		http.csrf((csrf) -> csrf.disable())
			.sessionManagement((session) -> session.sessionCreationPolicy(SessionCreationPolicy.STATELESS))
			.requestCache((cache) -> cache.disable())
			.authorizeHttpRequests((requests) -> requests.requestMatchers(EndpointRequest.toAnyEndpoint())
				.permitAll()
				.requestMatchers(HttpMethod.GET, OPENAPI_DOCUMENT)
				.permitAll()
				// Every method: HEAD (and whatever else reaches the handler) is as admin-only as GET.
				.requestMatchers("/api/v1/users")
				.hasAuthority(Caller.ADMIN_AUTHORITY)
				.anyRequest()
				.authenticated())
			.oauth2ResourceServer((server) -> server.authenticationEntryPoint(errors)
				.accessDeniedHandler(errors)
				.jwt((jwt) -> jwt.jwtAuthenticationConverter(adminClaimConverter())))
			.exceptionHandling((handling) -> handling.authenticationEntryPoint(errors).accessDeniedHandler(errors));
		return http.build();
	}

	@Bean
	JwtDecoder jwtDecoder(JwtProperties properties) {
		SecretKeySpec key = new SecretKeySpec(properties.secret().getBytes(StandardCharsets.UTF_8), "HmacSHA256");
		NimbusJwtDecoder decoder = NimbusJwtDecoder.withSecretKey(key).macAlgorithm(MacAlgorithm.HS256).build();
		decoder.setJwtValidator(new DelegatingOAuth2TokenValidator<>(JwtValidators.createDefault(),
				new TokenRules(properties)));
		return new CachingJwtDecoder(decoder);
	}

	private static JwtAuthenticationConverter adminClaimConverter() {
		JwtAuthenticationConverter converter = new JwtAuthenticationConverter();
		converter.setJwtGrantedAuthoritiesConverter((jwt) -> {
			List<GrantedAuthority> authorities = Boolean.TRUE.equals(jwt.getClaim(Caller.ADMIN_CLAIM))
					? List.of(new SimpleGrantedAuthority(Caller.ADMIN_AUTHORITY)) : List.of();
			return authorities;
		});
		return converter;
	}

}
