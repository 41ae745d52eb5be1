package dev.elves.gateway.web;

import java.util.List;

import dev.elves.web.BodyLimitFilter;
import dev.elves.web.EncodedSlashesReachTheApplication;
import dev.elves.web.IdleConnectionsEndWithinTheDrain;
import dev.elves.web.JsonErrorPage;
import dev.elves.web.ShutdownDrainConfiguration;

import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.web.method.support.HandlerMethodArgumentResolver;
import org.springframework.web.servlet.config.annotation.InterceptorRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

import tools.jackson.databind.json.JsonMapper;

/**
 * Lets controller methods take a {@link Call}; limits what one caller may send: the body size
 * (before anything, even the token check, reads it) and, when set, calls per user. Ahead of
 * every filter: the shutdown drain, then admission control, then the body limit.
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(LimitProperties.class)
@Import({ ShutdownDrainConfiguration.class, IdleConnectionsEndWithinTheDrain.class,
		EncodedSlashesReachTheApplication.class, JsonErrorPage.class })
class WebConfiguration implements WebMvcConfigurer {

	private final LimitProperties limits;

	WebConfiguration(LimitProperties limits) {
		this.limits = limits;
	}

	@Override
	public void addArgumentResolvers(List<HandlerMethodArgumentResolver> resolvers) {
		resolvers.add(new CallArgumentResolver());
	}

	@Override
	public void addInterceptors(InterceptorRegistry registry) {
		if (this.limits.userRate() > 0) {
			registry.addInterceptor(new UserRateLimit(this.limits.userRate(), this.limits.burst(), System::nanoTime))
				.addPathPatterns("/api/**");
		}
	}

	@Bean
	FilterRegistrationBean<BodyLimitFilter> bodyLimitFilter(JsonMapper mapper) {
		FilterRegistrationBean<BodyLimitFilter> registration = new FilterRegistrationBean<>(
				new BodyLimitFilter(this.limits.maxBody().toBytes(), mapper));
		registration.setOrder(ShutdownDrainConfiguration.NEXT + 1);
		return registration;
	}

}
