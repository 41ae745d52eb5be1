package dev.elves.registry.web;

import java.time.Clock;

import dev.elves.web.BodyLimitFilter;
import dev.elves.web.EncodedSlashesReachTheApplication;
import dev.elves.web.JsonErrorPage;
import dev.elves.web.ShutdownDrainConfiguration;

import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.web.servlet.config.annotation.InterceptorRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

import tools.jackson.databind.json.JsonMapper;

/**
 * The API's guards, first in the chain after the shutdown drain: the service key (or a runner's run
 * credential), then the body size; after routing, what a run credential may call.
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(ApiProperties.class)
@Import({ ShutdownDrainConfiguration.class, EncodedSlashesReachTheApplication.class, JsonErrorPage.class })
class ApiWebConfiguration implements WebMvcConfigurer {

	private final JsonMapper mapper;

	ApiWebConfiguration(JsonMapper mapper) {
		this.mapper = mapper;
	}

	@Bean
	FilterRegistrationBean<ServiceKeyFilter> serviceKeyFilter(ApiProperties properties, JsonMapper mapper) {
		FilterRegistrationBean<ServiceKeyFilter> registration = new FilterRegistrationBean<>(
				new ServiceKeyFilter(properties.serviceKey(), mapper, Clock.systemUTC()));
		registration.setOrder(ShutdownDrainConfiguration.NEXT);
		return registration;
	}

	@Bean
	FilterRegistrationBean<BodyLimitFilter> bodyLimitFilter(ApiProperties properties, JsonMapper mapper) {
		FilterRegistrationBean<BodyLimitFilter> registration = new FilterRegistrationBean<>(
				new BodyLimitFilter(properties.maxBody().toBytes(), mapper));
		registration.setOrder(ShutdownDrainConfiguration.NEXT + 1);
		return registration;
	}

	@Override
	public void addInterceptors(InterceptorRegistry registry) {
		registry.addInterceptor(new RunScopeInterceptor(this.mapper));
	}

}
